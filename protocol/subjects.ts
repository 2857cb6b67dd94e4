/**
 * THE registry: every request and event of the bus. Subjects are relative to the
 * configured prefix (`bus.prefix`, default `cortado`). Nothing outside protocol/ names a
 * subject string (a test greps for strays).
 */
import { defineEvent, defineRequest, assertSubject, type RequestDef } from './define.js';
import { AskConfirmRequest, AskReply, AskRequest } from './schemas/ask.js';
import { SysStatsReply, SysStatsRequest } from './schemas/sys.js';
import {
  SchemaContextReply,
  SchemaContextRequest,
  SchemaDescribeReply,
  SchemaDescribeRequest,
  SchemaTablesReply,
  SchemaTablesRequest,
} from './schemas/catalog.js';
import { Empty } from './schemas/common.js';
import { QueryExecuted, QueryFailed, QueryGenerated, QueryRejected } from './schemas/events.js';
import { InsightsGenerateReply, InsightsGenerateRequest } from './schemas/insights.js';
import * as I from './schemas/identity.js';
import * as P from './schemas/policy.js';
import * as Sc from './schemas/scope.js';
import * as Se from './schemas/semantic.js';
import * as An from './schemas/analytics.js';
import * as Sch from './schemas/schedules.js';
import * as Ex from './schemas/export.js';
import * as Ops from './schemas/ops.js';
import * as Al from './schemas/alarms.js';
import * as W from './schemas/workspace.js';
import * as Own from './schemas/own-tokens.js';
import * as Ev from './schemas/eval.js';
import { SqlProfileReply, SqlProfileRequest, SqlValuesReply, SqlValuesRequest } from './schemas/profile.js';
import { LlmCompleteReply, LlmCompleteRequest, LlmStatusReply } from './schemas/llm.js';
import {
  ChatReplyReply,
  ChatReplyRequest,
  IntentDetectReply,
  IntentDetectRequest,
  SqlCheckReply,
  SqlCheckRequest,
  SqlEstimateReply,
  SqlExecuteReply,
  SqlExecuteRequest,
  SqlGenerateReply,
  SqlGenerateRequest,
  SqlIntrospectReply,
  SqlPingReply,
} from './schemas/sql.js';

/** The actors, by name. The name is also the queue group. */
export const Actor = {
  Assistant: 'assistant',
  Intent: 'intent',
  SqlGen: 'sqlgen',
  Executor: 'executor',
  Catalog: 'catalog',
  Llm: 'llm',
  Insights: 'insights',
  Identity: 'identity',
  Settings: 'settings',
  Audit: 'audit',
  Masking: 'masking',
  Alerts: 'alerts',
  Mailer: 'mailer',
  Semantic: 'semantic',
  Analytics: 'analytics',
  Scheduler: 'scheduler',
  Ops: 'ops',
  Alarms: 'alarms',
  Workspace: 'workspace',
  Eval: 'eval',
} as const;
export type Actor = (typeof Actor)[keyof typeof Actor];
export const ALL_ACTORS: readonly Actor[] = Object.values(Actor);

// ---- requests -----------------------------------------------------------------------------

export const Ask = defineRequest({
  subject: 'ask', owner: Actor.Assistant, timeoutMs: 330_000, request: AskRequest, reply: AskReply,
});
export const AskConfirm = defineRequest({
  subject: 'ask.confirm', owner: Actor.Assistant, timeoutMs: 330_000, request: AskConfirmRequest, reply: AskReply,
});

export const IntentDetect = defineRequest({
  subject: 'intent.detect', owner: Actor.Intent, timeoutMs: 90_000, request: IntentDetectRequest, reply: IntentDetectReply,
});
export const ChatReply = defineRequest({
  subject: 'intent.chat', owner: Actor.Intent, timeoutMs: 90_000, request: ChatReplyRequest, reply: ChatReplyReply,
});

export const SqlGenerate = defineRequest({
  subject: 'sql.generate', owner: Actor.SqlGen, timeoutMs: 120_000, request: SqlGenerateRequest, reply: SqlGenerateReply,
});

export const SqlExecute = defineRequest({
  subject: 'sql.execute', owner: Actor.Executor, timeoutMs: 310_000, request: SqlExecuteRequest, reply: SqlExecuteReply,
});
export const SqlCheck = defineRequest({
  subject: 'sql.check', owner: Actor.Executor, timeoutMs: 5_000, request: SqlCheckRequest, reply: SqlCheckReply,
});
export const SqlEstimate = defineRequest({
  subject: 'sql.estimate', owner: Actor.Executor, timeoutMs: 60_000, request: SqlCheckRequest, reply: SqlEstimateReply,
});
export const SqlIntrospect = defineRequest({
  subject: 'sql.introspect', owner: Actor.Executor, timeoutMs: 60_000, request: Empty, reply: SqlIntrospectReply,
});
export const SqlPing = defineRequest({
  subject: 'sql.ping', owner: Actor.Executor, timeoutMs: 3_000, request: Empty, reply: SqlPingReply,
});
/** one query written to a file (csv, excel, html) in the exports Object Store bucket, masked, page by page */
export const SqlExport = defineRequest({
  subject: 'sql.export', owner: Actor.Executor, timeoutMs: 330_000, request: Ex.SqlExportRequest, reply: Ex.SqlExportReply,
});
/** statistics or a bounded sample of one schema's tables, and value-overlap checks (semantic discover) */
export const SqlProfile = defineRequest({
  subject: 'sql.profile', owner: Actor.Executor, timeoutMs: 120_000, request: SqlProfileRequest, reply: SqlProfileReply,
});

/** Low-cardinality text values of every table the caller sees, from the engine's statistics (the catalog's value index). */
export const SqlValues = defineRequest({
  subject: 'sql.values', owner: Actor.Executor, timeoutMs: 120_000, request: SqlValuesRequest, reply: SqlValuesReply,
});

export const SchemaTables = defineRequest({
  subject: 'schema.tables', owner: Actor.Catalog, timeoutMs: 60_000, request: SchemaTablesRequest, reply: SchemaTablesReply,
});
export const SchemaDescribe = defineRequest({
  subject: 'schema.describe', owner: Actor.Catalog, timeoutMs: 60_000, request: SchemaDescribeRequest, reply: SchemaDescribeReply,
});
export const SchemaContext = defineRequest({
  subject: 'schema.context', owner: Actor.Catalog, timeoutMs: 60_000, request: SchemaContextRequest, reply: SchemaContextReply,
});

export const LlmComplete = defineRequest({
  subject: 'llm.complete', owner: Actor.Llm, timeoutMs: 120_000, request: LlmCompleteRequest, reply: LlmCompleteReply,
});
export const LlmStatus = defineRequest({
  subject: 'llm.status', owner: Actor.Llm, timeoutMs: 2_000, request: Empty, reply: LlmStatusReply,
});

export const InsightsGenerate = defineRequest({
  subject: 'insights.generate', owner: Actor.Insights, timeoutMs: 60_000, request: InsightsGenerateRequest, reply: InsightsGenerateReply,
});

// ---- identity, settings and audit ---------------------------------------------------------

const identity = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 15_000) =>
  defineRequest({ subject: `identity.${subject}`, owner: Actor.Identity, timeoutMs, request, reply });
/**
 * Runtime config, prompts, mask rules and LDAP settings are the settings actor's: `settings.*`.
 * Until release FORMER_SETTINGS_NAMES_REMOVED_IN they are also served under the `identity.`
 * names they had when the identity actor owned them (FORMER_NAMES), for processes of an older
 * release during a rolling upgrade (docs/operations.md "Upgrading").
 */
const settings = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 15_000) =>
  defineRequest({ subject: `settings.${subject}`, owner: Actor.Settings, timeoutMs, request, reply });

export const IdentityLogin = identity('login', I.LoginRequest, I.LoginReply);
export const IdentitySession = identity('session', I.SessionRequest, I.SessionInfo);
export const IdentityLogout = identity('logout', I.LogoutRequest, I.Ok);
export const TokenIssue = identity('token.issue', I.TokenIssueRequest, I.TokenIssueReply);
export const TokenCheck = identity('token.check', I.TokenCheckRequest, I.TokenCheckReply);
export const TokenList = identity('token.list', I.TokenListRequest, I.TokenListReply);
export const TokenRevoke = identity('token.revoke', I.TokenIdRequest, I.Ok);
export const TokenDelete = identity('token.delete', I.TokenIdRequest, I.Ok);
export const ConfigView = settings('config.view', Empty, I.ConfigViewReply);
export const ConfigUpdate = settings('config.update', I.ConfigUpdateRequest, I.ConfigChangeReply);
export const ConfigReset = settings('config.reset', I.ConfigResetRequest, I.ConfigChangeReply);
export const ConfigHistory = settings('config.history', I.ConfigHistoryRequest, I.ConfigHistoryReply);
export const ConfigStored = settings('config.stored', Empty, I.StoredOverridesReply, 5_000);
export const PromptsList = settings('prompts.list', Empty, I.PromptsReply);
export const MaskRulesList = settings('mask.list', Empty, I.MaskRulesReply);
export const MaskRuleCreate = settings('mask.create', I.MaskRuleCreate, I.MaskRuleSchema);
export const MaskRuleUpdate = settings('mask.update', I.MaskRuleUpdate, I.MaskRuleSchema);
export const MaskRuleDelete = settings('mask.delete', I.TokenIdRequest, I.Ok);
export const LdapView = settings('ldap.view', Empty, I.LdapSettingsView);
export const LdapUpdate = settings('ldap.update', I.LdapUpdateRequest, I.LdapSettingsView);
export const LdapTest = settings('ldap.test', I.LdapTestRequest, I.LdapTestReply, 30_000);

/** The release that stops serving the settings subjects under their former `identity.` names. */
export const FORMER_SETTINGS_NAMES_REMOVED_IN = '0.3.0';
/**
 * Deprecated: each settings request under its former name (`identity.<rest>`), the same
 * contract. The settings actor serves both names; clients of this release ask the new one.
 */
export const FORMER_NAMES: ReadonlyMap<RequestDef, RequestDef> = new Map(
  [ConfigView, ConfigUpdate, ConfigReset, ConfigHistory, ConfigStored, PromptsList, MaskRulesList, MaskRuleCreate, MaskRuleUpdate, MaskRuleDelete, LdapView, LdapUpdate, LdapTest]
    .map((def): [RequestDef, RequestDef] => [
      def, defineRequest({ subject: def.subject.replace(/^settings\./, 'identity.'), owner: def.owner, timeoutMs: def.timeoutMs, request: def.request, reply: def.reply }),
    ]),
);
// multi-user sessions (plugins.auth) and database scopes
export const AuthLogin = identity('auth.login', I.AuthLoginRequest, I.LoginReply, 30_000);
export const AuthAutoSession = identity('auth.auto', I.AutoSessionRequest, I.LoginReply);
export const AuthLogout = identity('auth.logout', I.LogoutRequest, I.Ok);
export const AuthToken = identity('auth.token', I.AuthTokenRequest, I.TokenIssueReply);
/** the Tokens tab: an auth session's own API tokens (actors/identity/own-tokens.ts) */
export const AuthTokenList = identity('auth.token.list', Own.OwnTokensRequest, I.TokenListReply);
export const AuthTokenRevoke = identity('auth.token.revoke', Own.OwnTokenRevokeRequest, I.Ok);
export const ScopeResolve = identity('scope.resolve', Sc.ScopeResolveRequest, Sc.ScopeInfo, 5_000);
export const SqlConnectTest = defineRequest({
  subject: 'sql.connect.test', owner: Actor.Executor, timeoutMs: 20_000, request: Sc.SqlConnectTestRequest, reply: Sc.SqlConnectTestReply,
});
export const AuditQuery = defineRequest({ subject: 'audit.query', owner: Actor.Audit, timeoutMs: 30_000, request: I.AuditQueryRequest, reply: I.AuditQueryReply });

// ---- masking, alerts, mail, discovery -----------------------------------------------------

export const ResultMask = defineRequest({ subject: 'result.mask', owner: Actor.Masking, timeoutMs: 30_000, request: P.ResultMaskRequest, reply: P.ResultMaskReply });
export const MailSend = defineRequest({ subject: 'mail.send', owner: Actor.Mailer, timeoutMs: 60_000, request: P.MailSendRequest, reply: P.MailSendReply });
/** what became of the e-mail of one idempotency key (a scheduled run redelivered after its e-mail) */
export const MailOutcome = defineRequest({ subject: 'mail.outcome', owner: Actor.Mailer, timeoutMs: 10_000, request: P.MailOutcomeRequest, reply: P.MailOutcomeReply });
export const SchemaDiscover = defineRequest({ subject: 'schema.discover', owner: Actor.Catalog, timeoutMs: 60_000, request: P.SchemaDiscoverRequest, reply: P.SchemaDiscoverReply });

// ---- semantic layer (the semantic actor; store/semantic.ts) --------------------------------

const semantic = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 15_000) =>
  defineRequest({ subject: `semantic.${subject}`, owner: Actor.Semantic, timeoutMs, request, reply });

export const SemanticEntityList = semantic('entity.list', Se.EntityListRequest, Se.EntityListReply);
export const SemanticEntityGet = semantic('entity.get', Se.EntityGetRequest, Se.SemanticEntity);
export const SemanticEntityCreate = semantic('entity.create', Se.EntityCreateRequest, Se.SemanticEntity, 30_000);
export const SemanticEntityUpdate = semantic('entity.update', Se.EntityUpdateRequest, Se.SemanticEntity);
export const SemanticEntityDelete = semantic('entity.delete', Se.DeleteRequest, Se.EntityDeleteReply);
export const SemanticColumnAdd = semantic('column.add', Se.ColumnAddRequest, Se.SemanticColumn);
export const SemanticColumnUpdate = semantic('column.update', Se.ColumnUpdateRequest, Se.SemanticColumn);
export const SemanticColumnDelete = semantic('column.delete', Se.ColumnDeleteRequest, Se.OkReply);
export const SemanticRelationshipList = semantic('relationship.list', Empty, Se.RelationshipListReply);
export const SemanticRelationshipGet = semantic('relationship.get', Se.EntityGetRequest, Se.SemanticRelationship);
export const SemanticRelationshipCreate = semantic('relationship.create', Se.RelationshipCreateRequest, Se.SemanticRelationship);
export const SemanticRelationshipUpdate = semantic('relationship.update', Se.RelationshipUpdateRequest, Se.SemanticRelationship);
export const SemanticRelationshipDelete = semantic('relationship.delete', Se.DeleteRequest, Se.OkReply);
export const SemanticMetricList = semantic('metric.list', Se.MetricListRequest, Se.MetricListReply);
export const SemanticMetricGet = semantic('metric.get', Se.EntityGetRequest, Se.SemanticMetric);
export const SemanticMetricCreate = semantic('metric.create', Se.MetricCreateRequest, Se.SemanticMetric, 30_000);
export const SemanticMetricUpdate = semantic('metric.update', Se.MetricUpdateRequest, Se.SemanticMetric, 30_000);
export const SemanticMetricDelete = semantic('metric.delete', Se.DeleteRequest, Se.OkReply);
export const SemanticContext = semantic('context', Se.ContextRequest, Se.ContextReply, 10_000);
export const SemanticDiscover = semantic('discover', Se.DiscoverRequest, Se.DiscoverReply, 120_000);

// ---- analytics (the analytics actor) --------------------------------------------------------

export const AnalyticsFeedback = defineRequest({ subject: 'analytics.feedback', owner: Actor.Analytics, timeoutMs: 10_000, request: An.FeedbackRequest, reply: Se.OkReply });
export const AnalyticsReportGet = defineRequest({ subject: 'analytics.report', owner: Actor.Analytics, timeoutMs: 30_000, request: An.ReportFilter, reply: An.AnalyticsReport });

// ---- scheduled reports (the scheduler actor; store/schedules.ts) ----------------------------

const schedule = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 15_000) =>
  defineRequest({ subject: `schedule.${subject}`, owner: Actor.Scheduler, timeoutMs, request, reply });

/** generates the pinned SQL (one model call) unless the body brings its own */
export const ScheduleCreate = schedule('create', Sch.ScheduleCreateRequest, Sch.Schedule, 150_000);
export const ScheduleList = schedule('list', Sch.ScheduleListRequest, Sch.ScheduleListReply);
export const ScheduleGet = schedule('get', Sch.ScheduleIdRequest, Sch.Schedule);
export const ScheduleUpdate = schedule('update', Sch.ScheduleUpdateRequest, Sch.Schedule, 150_000);
export const ScheduleDelete = schedule('delete', Sch.ScheduleIdRequest, Se.OkReply);
export const ScheduleRunNow = schedule('run', Sch.ScheduleIdRequest, Sch.ScheduleRunReply);
export const ScheduleHistory = schedule('history', Sch.ScheduleHistoryRequest, Sch.ScheduleHistoryReply);
export const CronPreview = schedule('cron.preview', Sch.CronPreviewRequest, Sch.CronPreviewReply, 5_000);

// ---- warehouse operations console (actors/ops; docs/ops.md) --------------------------------
export const OpsStatus = defineRequest({ subject: 'ops.status', owner: Actor.Ops, timeoutMs: 5_000, request: Empty, reply: Ops.OpsStatusReply });
/** one operation over every configured project (per-project errors in the reply); model insights included */
export const OpsRun = defineRequest({ subject: 'ops.run', owner: Actor.Ops, timeoutMs: 120_000, request: Ops.OpsRunRequest, reply: Ops.OpsRunReply });

// ---- alarms over the console's operations (actors/alarms; store/alarms.ts; docs/ops.md) ----
const alarm = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 15_000) =>
  defineRequest({ subject: `alarm.${subject}`, owner: Actor.Alarms, timeoutMs, request, reply });

export const AlarmList = alarm('list', Empty, Al.AlarmListReply);
export const AlarmGet = alarm('get', Al.AlarmIdRequest, Al.Alarm);
export const AlarmCreate = alarm('create', Al.AlarmCreateRequest, Al.Alarm);
export const AlarmUpdate = alarm('update', Al.AlarmUpdateRequest, Al.Alarm);
export const AlarmDelete = alarm('delete', Al.AlarmDeleteRequest, Al.OkReply);
/** evaluate now without notifying: the value, and what an evaluation would do (asks OpsRun) */
export const AlarmTest = alarm('test', Al.AlarmTestRequest, Al.AlarmTestReply, 125_000);
export const AlarmHistory = alarm('history', Al.AlarmHistoryRequest, Al.AlarmHistoryReply);

// ---- history, favourites and dashboards of each person (actors/workspace; store/workspace.ts) ----
const workspace = <Q extends import('typebox').TSchema, R extends import('typebox').TSchema>(subject: string, request: Q, reply: R, timeoutMs = 10_000) =>
  defineRequest({ subject: `workspace.${subject}`, owner: Actor.Workspace, timeoutMs, request, reply });

export const HistoryAdd = workspace('history.add', W.HistoryAddRequest, W.HistoryEntry);
export const HistoryList = workspace('history.list', W.HistoryListRequest, W.HistoryListReply);
export const HistoryFavourite = workspace('history.favourite', W.HistoryFavouriteRequest, W.HistoryEntry);
export const HistoryDelete = workspace('history.delete', W.WorkspaceItemRequest, W.WorkspaceOk);
export const DashboardList = workspace('dashboard.list', W.DashboardListRequest, W.DashboardListReply);
export const DashboardGet = workspace('dashboard.get', W.WorkspaceItemRequest, W.Dashboard);
export const DashboardSave = workspace('dashboard.save', W.DashboardSaveRequest, W.Dashboard);
export const DashboardDelete = workspace('dashboard.delete', W.WorkspaceItemRequest, W.WorkspaceOk);

// ---- the accuracy harness (actors/eval; `cortado eval`, POST /admin/eval) ----------------------

/**
 * A golden set through the live pipeline (`ask`, and `sql.execute` for the expected rows), as
 * configured and optionally with candidate prompts. Long: it works up to EVAL_RUN_MS, or to the
 * request's deadline, and answers in time with the questions it did not reach said so.
 */
export const EvalRun = defineRequest({ subject: 'eval.run', owner: Actor.Eval, timeoutMs: Ev.EVAL_RUN_MS + 15_000, request: Ev.EvalRunRequest, reply: Ev.EvalRunReply });

/**
 * The scheduler's work queue (runtime/bus-queue.ts, `bus.workQueue`): each execution to run,
 * put by the leader (a due tick) or by Run Now, taken by one worker of any scheduler process.
 */
export const ScheduleRunQueue = { name: 'schedule_runs', subject: 'queue.schedule.run', item: Sch.ScheduleJob } as const;

// ---- events -------------------------------------------------------------------------------
// Every event lands in the CORTADO_EVENTS stream and the audit actor records each one, so each
// is `durable`: acknowledged by JetStream, held in the bus's outbox until it is (runtime/outbox.ts).
// A fact nobody must be able to lose opts in the same way; one that may be lost leaves it out.

export const QueryGeneratedEvt = defineEvent({ subject: 'evt.query.generated', payload: QueryGenerated, durable: true });
export const QueryExecutedEvt = defineEvent({ subject: 'evt.query.executed', payload: QueryExecuted, durable: true });
export const QueryRejectedEvt = defineEvent({ subject: 'evt.query.rejected', payload: QueryRejected, durable: true });
export const QueryFailedEvt = defineEvent({ subject: 'evt.query.failed', payload: QueryFailed, durable: true });
export const ConfigChangedEvt = defineEvent({ subject: 'evt.config.changed', payload: I.ConfigChanged, durable: true });
export const LoginEvt = defineEvent({ subject: 'evt.identity.login', payload: I.LoginAttempt, durable: true });
export const TokenEvt = defineEvent({ subject: 'evt.identity.token', payload: I.TokenEvent, durable: true });
export const AlertRaisedEvt = defineEvent({ subject: 'evt.alert.raised', payload: P.AlertRaised, durable: true });
export const MailSentEvt = defineEvent({ subject: 'evt.mail.sent', payload: P.MailSent, durable: true });
export const MailFailedEvt = defineEvent({ subject: 'evt.mail.failed', payload: P.MailFailed, durable: true });
export const ScopeEndedEvt = defineEvent({ subject: 'evt.identity.scope.ended', payload: Sc.ScopeEnded, durable: true });
export const SemanticChangedEvt = defineEvent({ subject: 'evt.semantic.changed', payload: Se.SemanticChanged, durable: true });
export const MaskChangedEvt = defineEvent({ subject: 'evt.mask.changed', payload: I.MaskChanged, durable: true });
export const ScheduleRanEvt = defineEvent({ subject: 'evt.schedule.ran', payload: Sch.ScheduleRan, durable: true });
export const AlarmFiredEvt = defineEvent({ subject: 'evt.alarm.fired', payload: Al.AlarmChanged, durable: true });
export const AlarmResolvedEvt = defineEvent({ subject: 'evt.alarm.resolved', payload: Al.AlarmChanged, durable: true });
export const QuestionCompletedEvt = defineEvent({ subject: 'evt.question.completed', payload: An.QuestionCompleted, durable: true });

/**
 * Answered by every process (each bus serves it in a queue group of its own): its per-subject
 * stats. Read with `bus.gather(SysStats, {}, ctx)`; `bus.request` takes the first answer only.
 */
export const SysStats = defineRequest({ subject: 'sys.stats', owner: 'sys', timeoutMs: 2_000, request: SysStatsRequest, reply: SysStatsReply });

export const REQUESTS = [
  Ask, AskConfirm, SqlEstimate, IntentDetect, ChatReply, SqlGenerate, SqlExecute, SqlCheck, SqlIntrospect, SqlPing, SqlProfile, SqlValues, SqlExport,
  SchemaTables, SchemaDescribe, SchemaContext, LlmComplete, LlmStatus, InsightsGenerate,
  IdentityLogin, IdentitySession, IdentityLogout, TokenIssue, TokenCheck, TokenList, TokenRevoke, TokenDelete,
  ConfigView, ConfigUpdate, ConfigReset, ConfigHistory, ConfigStored, PromptsList, MaskRulesList, MaskRuleCreate, MaskRuleUpdate,
  MaskRuleDelete, LdapView, LdapUpdate, LdapTest, AuditQuery, ResultMask, MailSend, MailOutcome, SchemaDiscover,
  AuthLogin, AuthAutoSession, AuthLogout, AuthToken, ScopeResolve, SqlConnectTest, SysStats,
  SemanticEntityList, SemanticEntityGet, SemanticEntityCreate, SemanticEntityUpdate, SemanticEntityDelete,
  SemanticColumnAdd, SemanticColumnUpdate, SemanticColumnDelete,
  SemanticRelationshipList, SemanticRelationshipGet, SemanticRelationshipCreate, SemanticRelationshipUpdate, SemanticRelationshipDelete,
  SemanticMetricList, SemanticMetricGet, SemanticMetricCreate, SemanticMetricUpdate, SemanticMetricDelete,
  SemanticContext, SemanticDiscover, AnalyticsFeedback, AnalyticsReportGet,
  ScheduleCreate, ScheduleList, ScheduleGet, ScheduleUpdate, ScheduleDelete, ScheduleRunNow, ScheduleHistory, CronPreview,
  OpsStatus, OpsRun, AuthTokenList, AuthTokenRevoke,
  AlarmList, AlarmGet, AlarmCreate, AlarmUpdate, AlarmDelete, AlarmTest, AlarmHistory,
  HistoryAdd, HistoryList, HistoryFavourite, HistoryDelete, DashboardList, DashboardGet, DashboardSave, DashboardDelete,
  EvalRun,
] as const;
export const EVENTS = [
  QueryGeneratedEvt, QueryExecutedEvt, QueryRejectedEvt, QueryFailedEvt, ConfigChangedEvt, LoginEvt, TokenEvt, AlertRaisedEvt, MailSentEvt, MailFailedEvt,
  ScopeEndedEvt, SemanticChangedEvt, MaskChangedEvt, QuestionCompletedEvt, ScheduleRanEvt, AlarmFiredEvt, AlarmResolvedEvt,
] as const;

/** The durable consumer the alerts actor scores queries with. */
export const ALERTS_CONSUMER = 'alerts';

// ---- subjects built from parameters -------------------------------------------------------

/** Every event, for the stream and for `cortado tap`. */
export const EVENTS_WILDCARD = 'evt.>';

/** Progress of one question, for SSE/WS streaming. */
export function progressSubject(requestId: string): string {
  const token = requestId.replace(/[^a-zA-Z0-9_-]/g, '_').toLowerCase();
  const subject = `progress.${token}`;
  assertSubject(subject);
  return subject;
}

/** The JetStream stream that keeps every event. */
export function eventsStreamName(prefix: string): string {
  return `${prefix.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}_EVENTS`;
}

/** The durable consumer the audit actor reads the event stream with. */
export const AUDIT_CONSUMER = 'audit';

/** The durable consumer the analytics actor reads the questions' facts with (analytics.enabled). */
export const ANALYTICS_CONSUMER = 'analytics';

// ---- key-value buckets (runtime/kv.ts; bus.bucket opens one) -----------------------------

/** Every KV bucket, by what it holds; its name is `<prefix>_<bucket>` (bucketName). */
export const Bucket = {
  /** login sessions and lockout counters (identity) */
  Sessions: 'sessions',
  /** rate-limit counters, shared by every edge */
  Ratelimit: 'ratelimit',
  /** SQL that waits for the user's confirmation (assistant, confirm_before_execute) */
  Confirmations: 'confirmations',
  /** conversation turns (assistant) */
  Conversations: 'conversations',
  /** the mailer's: today's e-mail count (`day.<date>`, email.max_emails_per_day) and each idempotency key's e-mail (`sent.<key>`) */
  Mail: 'mail',
  /** alert claims and question counts (alerts) */
  Alerts: 'alerts',
  /** the model's insights of hybrid answers, until fetched (assistant writes, edge reads) */
  Insights: 'insights',
  /** the scheduler's leader lease (one key, kept alive by the leader; the bucket's TTL ends a dead leader's) */
  SchedulerLease: 'scheduler_lease',
  /** the alarms' evaluation lease (one key, as the scheduler's: the leader evaluates due alarms) */
  AlarmsLease: 'alarms_lease',
  /** export files (an Object Store bucket, bus.objects): the executor writes, the mailer and the edge read */
  Exports: 'exports',
} as const;
export type Bucket = (typeof Bucket)[keyof typeof Bucket];

export function bucketName(prefix: string, bucket: Bucket): string {
  return `${prefix.replace(/[^A-Za-z0-9]/g, '_')}_${bucket}`;
}

/** The KV bucket holding login sessions and lockout counters. */
export function sessionsBucket(prefix: string): string {
  return bucketName(prefix, Bucket.Sessions);
}

/** The KV bucket holding rate-limit counters, shared by every edge. */
export function ratelimitBucket(prefix: string): string {
  return bucketName(prefix, Bucket.Ratelimit);
}

/** The KV bucket holding SQL that waits for the user's confirmation (confirm_before_execute). */
export function confirmationsBucket(prefix: string): string {
  return bucketName(prefix, Bucket.Confirmations);
}

/** The KV bucket holding conversation turns. */
export function conversationsBucket(prefix: string): string {
  return bucketName(prefix, Bucket.Conversations);
}

/** The JetStream stream of a work queue (runtime/bus-queue.ts). */
export function queueStreamName(prefix: string, queue: string): string {
  return `${prefix.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}_${queue.toUpperCase()}`;
}
