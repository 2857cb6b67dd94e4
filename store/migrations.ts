/**
 * config_db's schema, as numbered migrations, and the one runner of them. Every table is
 * prefixed `cortado_` so config_db can share a database (and its search_path schema) with other
 * things. One list for every repository: the versions are one sequence, whoever adds a table.
 *
 * `migrate` applies what is missing, each migration once and in its own transaction, recorded
 * in cortado_schema_version. Each transaction first takes a transaction-level advisory lock, so
 * processes starting together queue up: the first applies a migration, the next finds it
 * recorded and skips it. Never edit a released migration: add the next one (a repository's new
 * table or column is a new version; data already stored is moved by that migration's SQL, never
 * dropped).
 *
 * Which repository each table belongs to (store/<domain>.ts):
 *   v1  cortado_config_overrides, cortado_config_override_history  overrides (and the prompts
 *                                                                   and LDAP settings kept there)
 *       cortado_api_tokens                                          tokens
 *       cortado_mask_rules                                          mask-rules
 *       cortado_audit_log                                           audit
 *   v2  cortado_semantic_entities, _columns, _relationships, _metrics  semantic
 *   v3  cortado_schedules, cortado_schedule_executions                  schedules
 *   v4  cortado_history, cortado_dashboards                             workspace
 *   v5  cortado_alarms                                                  alarms
 *   v6  cortado_schedules.timezone nullable, cortado_schedule_executions.drift  schedules
 *
 * The analytics database (analytics.postgresql, possibly another server) has a list of its own,
 * ANALYTICS_MIGRATIONS in store/analytics.ts, recorded in cortado_analytics_schema_version by the
 * same runner (`migrate`'s versionTable).
 */
import type pg from 'pg';
import type { Logger } from '../runtime/log.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** pg_advisory_xact_lock(int4, int4) keys: 'CRTD' and what the lock guards. */
export const LOCK_CLASS = 0x43525444;
export const LOCK_MIGRATIONS = 1;
export const LOCK_OVERRIDES = 2;

export const VERSION_TABLE = 'cortado_schema_version';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'overrides, tokens, mask rules, audit log',
    sql: `
CREATE TABLE cortado_config_overrides (
  key         text PRIMARY KEY,
  value       jsonb NOT NULL,
  updated_by  text NOT NULL,
  updated_at  timestamptz NOT NULL
);

CREATE TABLE cortado_config_override_history (
  id          bigserial PRIMARY KEY,
  key         text NOT NULL,
  old_value   jsonb,            -- NULL: the key had no override
  new_value   jsonb,            -- NULL: the override was removed
  changed_by  text NOT NULL,
  changed_at  timestamptz NOT NULL
);
CREATE INDEX cortado_config_override_history_key_idx ON cortado_config_override_history (key, id);

CREATE TABLE cortado_api_tokens (
  id            text PRIMARY KEY,
  prefix        text NOT NULL,
  hash          text NOT NULL CONSTRAINT cortado_api_tokens_hash_key UNIQUE,
  label         text NOT NULL DEFAULT '',
  username      text NOT NULL,
  db_config     jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
CREATE INDEX cortado_api_tokens_username_idx ON cortado_api_tokens (username);

CREATE TABLE cortado_mask_rules (
  id             text PRIMARY KEY,
  seq            bigserial NOT NULL,
  field_pattern  text NOT NULL,
  strategy       text NOT NULL,
  enabled        boolean NOT NULL DEFAULT true,
  description    text NOT NULL DEFAULT '',
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL
);

CREATE TABLE cortado_audit_log (
  event_id    text PRIMARY KEY,
  seq         bigserial NOT NULL,
  ts          timestamptz NOT NULL,
  type        text NOT NULL,
  request_id  text,
  username    text,
  channel     text,
  code        text,
  payload     jsonb NOT NULL
);
CREATE INDEX cortado_audit_log_ts_idx ON cortado_audit_log (ts DESC, seq DESC);
CREATE INDEX cortado_audit_log_type_idx ON cortado_audit_log (type, ts DESC);
CREATE INDEX cortado_audit_log_username_idx ON cortado_audit_log (username, ts DESC);
CREATE INDEX cortado_audit_log_request_id_idx ON cortado_audit_log (request_id);
`,
  },
  {
    version: 2,
    name: 'semantic layer',
    sql: `
CREATE TABLE cortado_semantic_entities (
  id            serial PRIMARY KEY,
  catalog       text NOT NULL DEFAULT '',
  schema_name   text NOT NULL,
  table_name    text NOT NULL,
  display_name  text NOT NULL,
  description   text NOT NULL DEFAULT '',
  primary_key   text NOT NULL DEFAULT '',
  entity_type   text NOT NULL DEFAULT 'table',
  synonyms      jsonb NOT NULL DEFAULT '[]',
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  CONSTRAINT cortado_semantic_entities_table_key UNIQUE (catalog, schema_name, table_name)
);

CREATE TABLE cortado_semantic_columns (
  id            serial PRIMARY KEY,
  entity_id     integer NOT NULL REFERENCES cortado_semantic_entities (id) ON DELETE CASCADE,
  name          text NOT NULL,
  display_name  text NOT NULL DEFAULT '',
  description   text NOT NULL DEFAULT '',
  role          text NOT NULL,
  aggregation   text,
  synonyms      jsonb NOT NULL DEFAULT '[]',
  data_type     text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  CONSTRAINT cortado_semantic_columns_name_key UNIQUE (entity_id, name)
);

CREATE TABLE cortado_semantic_relationships (
  id                 serial PRIMARY KEY,
  name               text NOT NULL,
  from_entity_id     integer NOT NULL REFERENCES cortado_semantic_entities (id) ON DELETE CASCADE,
  from_column        text NOT NULL,
  to_entity_id       integer NOT NULL REFERENCES cortado_semantic_entities (id) ON DELETE CASCADE,
  to_column          text NOT NULL,
  relationship_type  text NOT NULL,
  join_type          text NOT NULL DEFAULT 'LEFT',
  description        text NOT NULL DEFAULT '',
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL,
  CONSTRAINT cortado_semantic_relationships_key UNIQUE (from_entity_id, from_column, to_entity_id, to_column)
);

CREATE TABLE cortado_semantic_metrics (
  id              serial PRIMARY KEY,
  name            text NOT NULL CONSTRAINT cortado_semantic_metrics_name_key UNIQUE,
  display_name    text NOT NULL,
  sql_expression  text NOT NULL,
  format_type     text NOT NULL DEFAULT '',
  category        text NOT NULL DEFAULT '',
  description     text NOT NULL DEFAULT '',
  active          boolean NOT NULL DEFAULT true,
  entity_id       integer REFERENCES cortado_semantic_entities (id) ON DELETE SET NULL,
  synonyms        jsonb NOT NULL DEFAULT '[]',
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'scheduled reports',
    sql: `
CREATE TABLE cortado_schedules (
  id                text PRIMARY KEY,
  seq               bigserial NOT NULL,
  name              text NOT NULL,
  question          text NOT NULL,
  tables            jsonb NOT NULL DEFAULT '[]',
  cron              text NOT NULL,
  timezone          text NOT NULL,
  email_recipients  jsonb NOT NULL DEFAULT '[]',
  format            text NOT NULL,
  subject           text NOT NULL DEFAULT '',
  sql               text NOT NULL,
  explanation       text NOT NULL DEFAULT '',
  enabled           boolean NOT NULL DEFAULT true,
  missed            text NOT NULL DEFAULT 'once',
  owner_user        text NOT NULL,
  scope             text,             -- protocol/scope.ts: whose database connection a run uses
  owner             text,             -- protocol/scope.ts: who may see it (NULL: an admin's)
  fired_through     timestamptz,      -- the newest tick the leader fired
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL
);
-- names are unique per owner (an owner string, else the creator's user name)
CREATE UNIQUE INDEX cortado_schedules_name_key ON cortado_schedules ((COALESCE(owner, '~' || owner_user)), name);

CREATE TABLE cortado_schedule_executions (
  id              text PRIMARY KEY,
  seq             bigserial NOT NULL,
  schedule_id     text NOT NULL REFERENCES cortado_schedules (id) ON DELETE CASCADE,
  schedule_name   text NOT NULL,
  execution_time  timestamptz NOT NULL,
  trigger         text NOT NULL,
  status          text NOT NULL,
  started_at      timestamptz,
  finished_at     timestamptz,
  success         boolean NOT NULL DEFAULT false,
  email_sent      boolean NOT NULL DEFAULT false,
  email_error     text,
  error_message   text,
  rows_returned   bigint,
  duration_ms     double precision,
  attachment      jsonb,
  created_at      timestamptz NOT NULL
);
-- one run per tick (cron and recovery): the scheduler's exactly-once guard
CREATE UNIQUE INDEX cortado_schedule_executions_tick_key ON cortado_schedule_executions (schedule_id, execution_time) WHERE trigger <> 'manual';
CREATE INDEX cortado_schedule_executions_schedule_idx ON cortado_schedule_executions (schedule_id, execution_time DESC, seq DESC);
`,
  },
  {
    version: 4,
    name: 'history and dashboards',
    sql: `
CREATE TABLE cortado_history (
  id          text PRIMARY KEY,
  owner       text NOT NULL,   -- the workspace owner (edge/http/routes/workspace.ts)
  question    text NOT NULL,
  sql         text,
  row_count   bigint,
  request_id  text,
  favourite   boolean NOT NULL DEFAULT false,
  at          timestamptz NOT NULL
);
CREATE INDEX cortado_history_owner_idx ON cortado_history (owner, at DESC, id);

CREATE TABLE cortado_dashboards (
  id          text NOT NULL,
  owner       text NOT NULL,
  name        text NOT NULL,
  tiles       jsonb NOT NULL DEFAULT '[]',
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (owner, id)
);
`,
  },
  {
    version: 5,
    name: 'alarms',
    sql: `
CREATE TABLE cortado_alarms (
  id          text PRIMARY KEY,
  seq         bigserial NOT NULL,
  name        text NOT NULL,
  record      jsonb NOT NULL,    -- the alarm as the API shows it, and the tick claimed last (store/alarms.ts)
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
-- names are unique regardless of case, as in the alarms file
CREATE UNIQUE INDEX cortado_alarms_name_key ON cortado_alarms (lower(name));
`,
  },
  {
    version: 6,
    name: 'schedules without a zone of their own; drift on executions',
    sql: `
-- NULL: the schedule has no zone of its own and follows scheduler.timezone as it is at each run
-- (a schedule stored before keeps the zone it was given or copied at creation)
ALTER TABLE cortado_schedules ALTER COLUMN timezone DROP NOT NULL;
-- true: the run failed because the database changed under the pinned SQL
ALTER TABLE cortado_schedule_executions ADD COLUMN drift boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 7,
    name: 'audit entries keep their trace id',
    sql: `
-- the W3C trace id the event was published under (the admin panel's audit detail links to the trace)
ALTER TABLE cortado_audit_log ADD COLUMN trace_id text;
`,
  },
];

/**
 * Apply the missing migrations; returns the versions this call applied. `versionTable`: where
 * they are recorded (another list, e.g. the analytics database's, keeps its own sequence).
 */
export async function migrate(pool: pg.Pool, log: Logger, migrations: readonly Migration[] = MIGRATIONS, versionTable: string = VERSION_TABLE): Promise<number[]> {
  const applied: number[] = [];
  const client = await pool.connect();
  let broken = false;
  try {
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, LOCK_MIGRATIONS]);
        await client.query(`CREATE TABLE IF NOT EXISTS ${versionTable} (
          version     integer PRIMARY KEY,
          name        text NOT NULL,
          applied_at  timestamptz NOT NULL DEFAULT now())`);
        const done = await client.query(`SELECT 1 FROM ${versionTable} WHERE version = $1`, [m.version]);
        if (done.rowCount === 0) {
          await client.query(m.sql);
          await client.query(`INSERT INTO ${versionTable} (version, name) VALUES ($1, $2)`, [m.version, m.name]);
          applied.push(m.version);
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw err;
      }
      if (applied.at(-1) === m.version) log.info({ version: m.version, migration: m.name, versions: versionTable }, 'migration applied');
    }
    const newest = await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${versionTable}`);
    const known = Math.max(0, ...migrations.map((m) => m.version));
    const v = newest.rows[0]?.v ?? 0;
    if (v > known) log.warn({ schema_version: v, known_version: known, versions: versionTable }, 'the schema is newer than this Cortado knows (a newer version ran here); carrying on');
  } finally {
    client.release(broken ? new Error('connection left in a failed state') : undefined);
  }
  return applied;
}
