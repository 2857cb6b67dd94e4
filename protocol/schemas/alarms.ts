/**
 * Alarms over the warehouse operations console (SPEC.md "Sections ops_agent, alarms, issue
 * tracker"; the spec shows only the keys, docs/ops.md "Alarms" the behaviour). Owned by the
 * alarms actor: each alarm is a condition over one of the ops actor's operations, evaluated on
 * its own cron, exactly once across every alarms process; a change of state (ok → firing,
 * firing → ok) e-mails the recipients and, with the issue tracker on, opens one issue and
 * comments on it when the alarm resolves.
 *
 * Money is US dollars at ops_agent's price per TB; a saturation share is a fraction (0.8 = 80 %).
 */
import Type, { type Static } from 'typebox';

/** What an alarm watches, and the operation that measures it. */
export const AlarmKind = Type.Enum(['forecast_above', 'daily_cost_above', 'public_dataset', 'saturation_above', 'query_cost_above']);
export type AlarmKind = Static<typeof AlarmKind>;

export const AlarmCondition = Type.Object({
  kind: AlarmKind,
  /**
   * forecast_above, daily_cost_above, query_cost_above: USD; public_dataset: how many public
   * datasets are tolerated (0: any fires); saturation_above: a share of the slot capacity, 0–1
   */
  threshold: Type.Number({ minimum: 0, maximum: 1e12 }),
  /** saturation_above only: how long the share must hold, in minutes */
  minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 60 })),
  /** one project (its project_id, or the label of the configured database); absent: every target */
  project_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});
export type AlarmCondition = Static<typeof AlarmCondition>;

export const AlarmState = Type.Enum(['ok', 'firing']);
export type AlarmState = Static<typeof AlarmState>;

/** One line of an alarm's history: a change of state, an evaluation that failed, a notification that did. */
export const AlarmHistoryEntry = Type.Object({
  at: Type.String(),
  /** `error`: the evaluation could not measure (the state stayed as it was) */
  state: Type.Enum(['ok', 'firing', 'error']),
  value: Type.Union([Type.Number(), Type.Null()]),
  message: Type.String({ maxLength: 2000 }),
  issue_key: Type.Optional(Type.String()),
});
export type AlarmHistoryEntry = Static<typeof AlarmHistoryEntry>;

/** the entries an alarm keeps (newest first); older ones are dropped */
export const ALARM_HISTORY_MAX = 50;

export const Alarm = Type.Object({
  id: Type.String(),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  condition: AlarmCondition,
  /** five-field cron (as schedules), read in `timezone` */
  cron: Type.String({ maxLength: 200 }),
  timezone: Type.String({ maxLength: 64 }),
  /** who is e-mailed on firing and on resolve (alarms.default_recipients when created without) */
  recipients: Type.Array(Type.String({ maxLength: 320 }), { maxItems: 100 }),
  enabled: Type.Boolean(),
  state: AlarmState,
  /** the last measured value (USD, a count, or minutes saturated); null before the first evaluation */
  value: Type.Union([Type.Number(), Type.Null()]),
  /** when the current (or last) firing began */
  first_seen: Type.Optional(Type.String()),
  /** the last evaluation that found it firing */
  last_seen: Type.Optional(Type.String()),
  last_evaluated: Type.Optional(Type.String()),
  /** the last evaluation's failure, until one succeeds */
  last_error: Type.Optional(Type.String({ maxLength: 2000 })),
  /** the issue opened for the current (or last) firing */
  issue_key: Type.Optional(Type.String({ maxLength: 100 })),
  /** whether `issue_key` is still open (commented on resolve: then false) */
  issue_open: Type.Optional(Type.Boolean()),
  history: Type.Array(AlarmHistoryEntry, { maxItems: ALARM_HISTORY_MAX }),
  created_at: Type.String(),
  updated_at: Type.String(),
  updated_by: Type.String(),
});
export type Alarm = Static<typeof Alarm>;

// ---- requests ---------------------------------------------------------------------------

export const AlarmIdRequest = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export type AlarmIdRequest = Static<typeof AlarmIdRequest>;

const editable = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  condition: AlarmCondition,
  cron: Type.String({ minLength: 1, maxLength: 200 }),
  timezone: Type.String({ minLength: 1, maxLength: 64 }),
  recipients: Type.Array(Type.String({ minLength: 1, maxLength: 320 }), { maxItems: 100 }),
  enabled: Type.Boolean(),
};

/** The HTTP body of POST /api/alarms (name and condition required; cron default every 15 minutes). */
export const AlarmBody = Type.Object({
  name: editable.name,
  condition: editable.condition,
  cron: Type.Optional(editable.cron),
  timezone: Type.Optional(editable.timezone),
  recipients: Type.Optional(editable.recipients),
  enabled: Type.Optional(editable.enabled),
});
export type AlarmBody = Static<typeof AlarmBody>;

/** The HTTP body of PUT /api/alarms/{id}: any subset; fields it omits are kept. */
export const AlarmPatchBody = Type.Partial(Type.Object(editable));
export type AlarmPatchBody = Static<typeof AlarmPatchBody>;

/** The HTTP body of POST /api/alarms/{id}/test: optionally a draft condition to try instead of the saved one. */
export const AlarmTestBody = Type.Object({ condition: Type.Optional(AlarmCondition) });

export const AlarmCreateRequest = Type.Object({ ...AlarmBody.properties, by: Type.String() });
export type AlarmCreateRequest = Static<typeof AlarmCreateRequest>;

export const AlarmUpdateRequest = Type.Object({ ...AlarmPatchBody.properties, id: AlarmIdRequest.properties.id, by: Type.String() });
export type AlarmUpdateRequest = Static<typeof AlarmUpdateRequest>;

export const AlarmDeleteRequest = Type.Object({ id: AlarmIdRequest.properties.id, by: Type.String() });

/** Test a saved alarm (`id`), optionally with a draft condition, or a draft condition alone (no id). */
export const AlarmTestRequest = Type.Object({
  id: Type.Optional(AlarmIdRequest.properties.id),
  condition: Type.Optional(AlarmCondition),
});
export type AlarmTestRequest = Static<typeof AlarmTestRequest>;

export const AlarmHistoryRequest = Type.Object({
  id: AlarmIdRequest.properties.id,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ALARM_HISTORY_MAX })),
});

// ---- replies ----------------------------------------------------------------------------

export const AlarmStorageInfo = Type.Object({
  /** file: alarms.storage_path; postgresql: config_db (which wins when it is on) */
  kind: Type.Enum(['file', 'postgresql', 'memory']),
  path: Type.Optional(Type.String()),
  /** missing: the file is not there yet (made at the first change) */
  state: Type.Enum(['ok', 'missing']),
});

/** The issue tracker as the console shows it: never the token, only whether one is set. */
export const TrackerInfo = Type.Object({
  enabled: Type.Boolean(),
  url: Type.String(),
  project_key: Type.String(),
  issue_type: Type.String(),
  priority: Type.String(),
  api_token_set: Type.Boolean(),
});

export const AlarmListReply = Type.Object({
  alarms: Type.Array(Alarm),
  storage: AlarmStorageInfo,
  default_recipients: Type.Array(Type.String()),
  tracker: TrackerInfo,
});
export type AlarmListReply = Static<typeof AlarmListReply>;

export const AlarmHistoryReply = Type.Object({ history: Type.Array(AlarmHistoryEntry) });

/** Per target: what it measured, or why it could not. */
export const AlarmTargetValue = Type.Object({
  label: Type.String(),
  value: Type.Union([Type.Number(), Type.Null()]),
  error: Type.Optional(Type.String()),
});

export const AlarmTestReply = Type.Object({
  /** null: nothing could be measured (see `error`) */
  value: Type.Union([Type.Number(), Type.Null()]),
  threshold: Type.Number(),
  /** whether the condition holds now */
  fires: Type.Boolean(),
  message: Type.String(),
  error: Type.Optional(Type.String()),
  targets: Type.Array(AlarmTargetValue),
  /** what an evaluation now would do: fire, resolve, stay firing, stay ok, or nothing (it cannot measure) */
  would: Type.Enum(['fire', 'resolve', 'stay_firing', 'stay_ok', 'nothing']),
  /** what would be sent: the e-mail's recipients, and the issue tracker's part */
  recipients: Type.Array(Type.String()),
  issue: Type.String(),
});
export type AlarmTestReply = Static<typeof AlarmTestReply>;

export const OkReply = Type.Object({ ok: Type.Boolean() });

// ---- events -----------------------------------------------------------------------------

export const AlarmChanged = Type.Object({
  id: Type.String(),
  ts: Type.String(),
  request_id: Type.String(),
  alarm_id: Type.String(),
  name: Type.String(),
  kind: AlarmKind,
  value: Type.Union([Type.Number(), Type.Null()]),
  threshold: Type.Number(),
  project_id: Type.Optional(Type.String()),
  message: Type.String(),
  issue_key: Type.Optional(Type.String()),
});
export type AlarmChanged = Static<typeof AlarmChanged>;
