/**
 * Every JSON body of the HTTP API, each derived from the bus request it becomes, so a field has
 * one limit whichever door it comes in by (HTTP, MCP tool arguments, the bus itself). The edge
 * validates a body against these before anything reaches the bus, and `readJson` hands the
 * route the body's static type.
 *
 * The limits, one value per field (the bus schemas they come from say the same):
 *
 * | field                              | limit                                              |
 * |------------------------------------|----------------------------------------------------|
 * | question                           | 1–4000 characters of text                          |
 * | tables                             | at most 200 names of 1–512 characters              |
 * | conversation_id, session_id        | 1–128 of `A-Z a-z 0-9 _ . : -`                     |
 * | confirmation_id                    | 1–100 characters                                   |
 * | table_schema, schema (hints)       | at most 200,000 characters of text                 |
 * | username / password                | 1–256 / at most 1024 characters                    |
 * | token label                        | at most 200 characters                             |
 * | mask rule pattern / description    | 1–200 / at most 500 characters                     |
 * | prompt text                        | at most 100,000 characters of text                 |
 * | feedback request_id / comment      | 1–128 characters / at most 2000 characters of text |
 * | semantic layer fields              | as protocol/schemas/semantic.ts says               |
 * | schedule fields                    | as protocol/schemas/schedules.ts says              |
 *
 * Text and names (protocol/schemas/text.ts): the fields `BODY_TEXT` lists hold text (tabs and
 * line breaks allowed); every other string of a body, at any depth, and every field name, is a
 * name: no control character at all.
 *
 * Fields a body does not declare (at any depth) are refused with 400 naming them, so no body can
 * set a field its route adds itself (a session's secret, an owner, the user, an id from the
 * path). The SQLatte-compatible routes (/query, /query/confirm-execute, /auth/login,
 * /auth/query, /auth/query/confirm), whose widgets send more than Cortado reads, and the writes
 * of alarms, schedules and the semantic layer (a record as GET gave it may be sent back) drop
 * them instead: edge/http/fields.ts.
 */
import Type, { type Static } from 'typebox';
import { AskConfirmRequest, AskRequest, ConfirmationId, ConversationId } from './ask.js';
import { SqlExportRequest } from './export.js';
import { MailSendRequest } from './policy.js';
import { FeedbackRequest } from './analytics.js';
import {
  AuthLoginRequest, AuthTokenRequest, ConfigUpdateRequest, LdapTestRequest, LdapUpdateRequest, LoginRequest, MaskRuleCreate, MaskRuleUpdate, TokenIssueRequest,
} from './identity.js';
import { CronPreviewRequest, ScheduleInput, SchedulePatch, ScheduleUpdateRequest } from './schedules.js';
import {
  ColumnInput, ColumnPatch, DiscoverRequest, EntityInput, EntityPatch, MetricInput, MetricPatch, RelationshipInput, RelationshipPatch,
} from './semantic.js';

/** characters of a schema text SQLatte widgets send as a hint (Cortado finds the tables itself) */
export const SCHEMA_HINT_MAX = 200_000;
/** characters of a prompt */
export const PROMPT_MAX = 100_000;

const SchemaHint = Type.Optional(Type.String({ maxLength: SCHEMA_HINT_MAX }));
/** the legacy widget's conversation: null is no conversation */
const SessionId = Type.Optional(Type.Union([ConversationId, Type.Null()]));

// ---- questions ------------------------------------------------------------------------------

/** POST /api/query (`widget`: the dashboard page says it is the dashboard; edge/http/routes/query.ts) */
export const ApiQueryBody = Type.Pick(AskRequest, ['question', 'tables', 'conversation_id', 'widget']);
export type ApiQueryBody = Static<typeof ApiQueryBody>;

/** POST /query (SQLatte-compatible): `session_id` is the conversation; `table_schema` is a hint only. */
export const LegacyQueryBody = Type.Object({
  ...Type.Pick(AskRequest, ['question', 'tables']).properties,
  table_schema: SchemaHint,
  schema: SchemaHint,
  session_id: SessionId,
});
export type LegacyQueryBody = Static<typeof LegacyQueryBody>;

/** POST /query/confirm-execute: the confirmation, and the widget's session_id it was asked with. */
export const LegacyConfirmBody = Type.Object({
  confirmation_id: ConfirmationId,
  session_id: SessionId,
});
export type LegacyConfirmBody = Static<typeof LegacyConfirmBody>;

/** POST /auth/query: the session's question; SQLatte's schema text is a hint only. */
export const AuthQueryBody = Type.Object({
  ...ApiQueryBody.properties,
  table_schema: SchemaHint,
  schema: SchemaHint,
});
export type AuthQueryBody = Static<typeof AuthQueryBody>;

/** POST /auth/query/confirm */
export const AuthConfirmBody = Type.Pick(AskConfirmRequest, ['confirmation_id']);
export type AuthConfirmBody = Static<typeof AuthConfirmBody>;

// ---- logins and tokens ----------------------------------------------------------------------

/** POST /admin/login, POST /assistant/login (JSON; a form post is read to the same shape) */
export const LoginBody = Type.Pick(LoginRequest, ['username', 'password']);
export type LoginBody = Static<typeof LoginBody>;

/** POST /auth/login: the user's own database credentials; the client address is the edge's to say. */
export const AuthLoginBody = Type.Object({
  ...Type.Omit(AuthLoginRequest, ['client']).properties,
  /** SQLatte's name for db_type */
  database_type: AuthLoginRequest.properties.db_type,
});
export type AuthLoginBody = Static<typeof AuthLoginBody>;

/** POST /auth/tokens: the session's own secret is the edge's to add. */
export const AuthTokenBody = Type.Omit(AuthTokenRequest, ['token']);
export type AuthTokenBody = Static<typeof AuthTokenBody>;

/** POST /admin/tokens: for the signed-in admin unless `username` names someone else. */
export const AdminTokenBody = Type.Object({
  ...TokenIssueRequest.properties,
  username: Type.Optional(TokenIssueRequest.properties.username),
});
export type AdminTokenBody = Static<typeof AdminTokenBody>;

// ---- settings -------------------------------------------------------------------------------

/** PUT /admin/config/:key */
export const ConfigValueBody = Type.Pick(ConfigUpdateRequest, ['value']);

/** GET /admin/config/schema: the config schema as a form (config/form.ts builds it; the admin panel draws it). */
export const ConfigFormField = Type.Object({
  key: Type.String(),
  label: Type.String(),
  kind: Type.Enum(['boolean', 'integer', 'number', 'string', 'enum', 'list', 'json']),
  options: Type.Optional(Type.Array(Type.String())),
  minimum: Type.Optional(Type.Number()),
  maximum: Type.Optional(Type.Number()),
  pattern: Type.Optional(Type.String()),
  default: Type.Optional(Type.Unknown()),
  description: Type.Optional(Type.String()),
  /** why the key is read at start only: PUT /admin/config/:key refuses it (403, details.start_only) */
  restart: Type.Optional(Type.String()),
  /** a secret: write-only, its value is never sent */
  secret: Type.Optional(Type.Literal(true)),
});
export const ConfigFormReply = Type.Object({
  sections: Type.Array(Type.Object({ key: Type.String(), title: Type.String(), description: Type.Optional(Type.String()), fields: Type.Array(ConfigFormField) })),
});
export type ConfigFormReply = Static<typeof ConfigFormReply>;
export type ConfigValueBody = Static<typeof ConfigValueBody>;

/** PUT /admin/prompts/:key (becomes a ConfigUpdate of `prompts.<key>`) */
export const PromptBody = Type.Object({ text: Type.String({ maxLength: PROMPT_MAX }) });
export type PromptBody = Static<typeof PromptBody>;

/** The most golden questions one POST /admin/eval runs (twice: as configured, and with the candidate prompts). */
export const ADMIN_EVAL_MAX = 50;

/**
 * POST /admin/eval: a golden set (YAML or JSON text, a list, or {questions}; checked by the
 * eval actor, `eval.run`) and the candidate prompts to try on it, for this run only (never saved).
 */
export const EvalBody = Type.Object({
  golden: Type.Union([
    Type.String({ minLength: 1, maxLength: 200_000 }),
    Type.Array(Type.Unknown(), { minItems: 1, maxItems: ADMIN_EVAL_MAX }),
    Type.Object({ questions: Type.Array(Type.Unknown(), { minItems: 1, maxItems: ADMIN_EVAL_MAX }) }),
  ]),
  prompts: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z_]{1,64}$' }), Type.String({ maxLength: PROMPT_MAX }))),
}, { additionalProperties: false });
export type EvalBody = Static<typeof EvalBody>;

/** POST /admin/mask-rules */
export const MaskRuleBody = MaskRuleCreate;
export type MaskRuleBody = Static<typeof MaskRuleBody>;

/** PUT /admin/mask-rules/:id: the fields to change; the id is the path's. */
export const MaskRulePatchBody = Type.Omit(MaskRuleUpdate, ['id']);
export type MaskRulePatchBody = Static<typeof MaskRulePatchBody>;

/** PUT /admin/ldap: the admin is the edge's to add. */
export const LdapBody = Type.Pick(LdapUpdateRequest, ['settings']);
export type LdapBody = Static<typeof LdapBody>;

/** POST /admin/ldap/test */
export const LdapTestBody = LdapTestRequest;
export type LdapTestBody = Static<typeof LdapTestBody>;

// ---- analytics ------------------------------------------------------------------------------

/**
 * POST /api/feedback: thumbs up or down on one answer; who gave it is the edge's to say. A legacy
 * widget sends the `session_id` it asked with (its conversation), which with its address names
 * it as the asker (edge/caller.ts).
 */
export const FeedbackBody = Type.Object({
  ...Type.Omit(FeedbackRequest, ['user', 'owner']).properties,
  session_id: SessionId,
});
export type FeedbackBody = Static<typeof FeedbackBody>;

// ---- semantic layer ---------------------------------------------------------------------------

/** POST /api/semantic/entities (with its columns, or none); PUT /api/semantic/entities/:id takes it without `columns`. */
export const SemanticEntityBody = EntityInput;
export type SemanticEntityBody = Static<typeof SemanticEntityBody>;
export const SemanticEntityPutBody = Type.Omit(EntityInput, ['columns']);
export type SemanticEntityPutBody = Static<typeof SemanticEntityPutBody>;
/** PATCH /api/semantic/entities/:id: any subset; the id is the path's. */
export const SemanticEntityPatchBody = EntityPatch;
export type SemanticEntityPatchBody = Static<typeof SemanticEntityPatchBody>;

/** POST and PUT /api/semantic/entities/:id/columns[/:column_id]; PATCH takes any subset. */
export const SemanticColumnBody = ColumnInput;
export type SemanticColumnBody = Static<typeof SemanticColumnBody>;
export const SemanticColumnPatchBody = ColumnPatch;
export type SemanticColumnPatchBody = Static<typeof SemanticColumnPatchBody>;

/** POST and PUT /api/semantic/relationships[/:id]; PATCH takes any subset. */
export const SemanticRelationshipBody = RelationshipInput;
export type SemanticRelationshipBody = Static<typeof SemanticRelationshipBody>;
export const SemanticRelationshipPatchBody = RelationshipPatch;
export type SemanticRelationshipPatchBody = Static<typeof SemanticRelationshipPatchBody>;

/** POST and PUT /api/semantic/metrics[/:id]; PATCH takes any subset (`{active}` (de)activates). */
export const SemanticMetricBody = MetricInput;
export type SemanticMetricBody = Static<typeof SemanticMetricBody>;
export const SemanticMetricPatchBody = MetricPatch;
export type SemanticMetricPatchBody = Static<typeof SemanticMetricPatchBody>;

/** POST /api/semantic/discover */
export const SemanticDiscoverBody = DiscoverRequest;
export type SemanticDiscoverBody = Static<typeof SemanticDiscoverBody>;

// ---- scheduled reports ------------------------------------------------------------------------

/** POST /api/schedules; PUT /api/schedules/:id takes the same fields (and `regenerate`). Who asks is the edge's to say. */
export const ScheduleBody = ScheduleInput;
export type ScheduleBody = Static<typeof ScheduleBody>;
export const SchedulePutBody = Type.Object({ ...ScheduleInput.properties, regenerate: ScheduleUpdateRequest.properties.regenerate });
export type SchedulePutBody = Static<typeof SchedulePutBody>;
/** PATCH /api/schedules/:id: any subset; `regenerate: true` turns the question into SQL again. */
export const SchedulePatchBody = Type.Object({ ...SchedulePatch.properties, regenerate: ScheduleUpdateRequest.properties.regenerate });
export type SchedulePatchBody = Static<typeof SchedulePatchBody>;
/** POST /api/schedules/cron-preview */
export const CronPreviewBody = CronPreviewRequest;
export type CronPreviewBody = Static<typeof CronPreviewBody>;

// ---- e-mail and exports ----------------------------------------------------------------------

/** POST /admin/test-email: one e-mail through the configured SMTP server (mail.send). */
export const TestEmailBody = Type.Object({
  to: MailSendRequest.properties.to.items,
  subject: Type.String({ minLength: 1, maxLength: 998 }),
  body: Type.String({ maxLength: 100_000 }),
});
export type TestEmailBody = Static<typeof TestEmailBody>;

/** POST /api/export: a result as a file (sql.export, in the caller's scope). */
export const ExportBody = Type.Object({
  sql: SqlExportRequest.properties.sql,
  format: SqlExportRequest.properties.format,
  /** the file's title (the question asked); default "Cortado export" */
  title: Type.Optional(SqlExportRequest.properties.title),
});
export type ExportBody = Static<typeof ExportBody>;

/** Top-level fields whose strings are text (tabs and line breaks allowed), per body; every other string is a name. */
export const BODY_TEXT = {
  api: ['question'],
  legacy: ['question', 'table_schema', 'schema'],
  config: ['value'],
  prompt: ['text'],
  eval: ['golden', 'prompts'],
  mask: ['description'],
  feedback: ['comment'],
  /** an entity's columns are text below `columns` here; their names are names all the same (the schema says so) */
  semanticEntity: ['description', 'columns'],
  semanticColumn: ['description'],
  semanticRelationship: ['description'],
  semanticMetric: ['description', 'sql_expression'],
  schedule: ['question', 'sql'],
  testEmail: ['body'],
  export: ['sql', 'title'],
} as const satisfies Record<string, readonly string[]>;
