/**
 * The analytics database (owner: the analytics actor): one row per question, its models, and
 * the thumbs given to it, in a PostgreSQL database of its own (analytics.postgresql) with its
 * own migrations and version table. Every figure of the report is computed by the database.
 *
 *   cortado_analytics_questions  one row per question (request id): when, who, where from,
 *                                intent, tables, rows, step durations, tokens and cost, error
 *                                code; the question's text only when analytics.store_questions
 *   cortado_analytics_models     per question and model: calls, tokens, cost
 *   cortado_analytics_feedback   thumbs up or down (and a comment) per question, from its asker
 *
 * A question recorded twice (a redelivered event) is kept once: the request id is the key
 * (INSERT … ON CONFLICT DO NOTHING). Feedback may arrive before its question (the event is
 * still on its way): it is kept, and the report joins it once the question is there.
 */
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from '../runtime/log.js';
import { STEPS, type AnalyticsReport, type QuestionCompleted } from '../protocol/schemas/analytics.js';
import type { Migration } from './migrations.js';
import { clean, iso, json, optText, PgDatabase } from './postgres.js';

export const ANALYTICS_VERSION_TABLE = 'cortado_analytics_schema_version';

export const ANALYTICS_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'analytics: questions, models, feedback',
    sql: `
CREATE TABLE cortado_analytics_questions (
  request_id     text PRIMARY KEY,
  event_id       text NOT NULL,
  ts             timestamptz NOT NULL,
  channel        text,
  widget         text,
  username       text,
  question       text,             -- NULL unless analytics.store_questions
  intent         text,
  tables         text[] NOT NULL DEFAULT '{}',
  row_count      integer,
  durations      jsonb NOT NULL,   -- step → milliseconds
  total_ms       double precision NOT NULL,
  input_tokens   bigint NOT NULL DEFAULT 0,
  output_tokens  bigint NOT NULL DEFAULT 0,
  cost_usd       double precision, -- NULL: no model of the question has a known price
  code           text              -- the error code; NULL when answered
);
CREATE INDEX cortado_analytics_questions_ts_idx ON cortado_analytics_questions (ts);
CREATE INDEX cortado_analytics_questions_user_idx ON cortado_analytics_questions (username, ts);

CREATE TABLE cortado_analytics_models (
  request_id     text NOT NULL REFERENCES cortado_analytics_questions (request_id) ON DELETE CASCADE,
  model          text NOT NULL,
  calls          integer NOT NULL,
  input_tokens   bigint NOT NULL,
  output_tokens  bigint NOT NULL,
  cost_usd       double precision,
  PRIMARY KEY (request_id, model)
);

CREATE TABLE cortado_analytics_feedback (
  request_id     text NOT NULL,
  username       text NOT NULL DEFAULT '',  -- '' when nobody is known
  rating         text NOT NULL CHECK (rating IN ('up', 'down')),
  comment        text,
  ts             timestamptz NOT NULL,
  PRIMARY KEY (request_id, username)
);
CREATE INDEX cortado_analytics_feedback_ts_idx ON cortado_analytics_feedback (ts);
`,
  },
  {
    version: 2,
    name: 'analytics: a question\'s owner; feedback is its asker\'s',
    sql: `
ALTER TABLE cortado_analytics_questions ADD COLUMN owner text;  -- protocol/scope.ts; NULL: none said (older rows, scheduled runs)
ALTER TABLE cortado_analytics_feedback ADD COLUMN owner text;
-- ratings kept before: one per user, as they were
UPDATE cortado_analytics_feedback SET owner = 'user:' || username;
ALTER TABLE cortado_analytics_feedback ALTER COLUMN owner SET NOT NULL;
ALTER TABLE cortado_analytics_feedback DROP CONSTRAINT cortado_analytics_feedback_pkey;
ALTER TABLE cortado_analytics_feedback ADD PRIMARY KEY (request_id, owner);
`,
  },
];

/**
 * Feedback that counts for a question: its asker's (the owners match), or anyone's for a
 * question whose owner is not known (recorded before owners were, or asked by no caller).
 */
const FEEDBACK_OF_Q = 'f.request_id = q.request_id AND (q.owner IS NULL OR q.owner = f.owner)';

/** A question's widget type in the report's SQL: what its event said, `unknown` when it said none. */
const WIDGET = "coalesce(q.widget, 'unknown')";

/** How long feedback whose question never arrived is kept (it raced the event, or named nothing). */
export const ORPHAN_FEEDBACK_MS = 24 * 3600_000;

export interface AnalyticsConnection {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

export interface ReportQuery {
  from: Date;
  /** exclusive */
  to: Date;
  channel?: string;
  /** the widget type (WidgetType); a question recorded without one is `unknown` */
  widget?: string;
  user?: string;
  top: number;
  /** show the kept question texts (analytics.store_questions) */
  questions: boolean;
}

export interface FeedbackInput {
  request_id: string;
  rating: 'up' | 'down';
  comment?: string;
  user?: string;
  /** who rates (protocol/scope.ts owner): only the question's own owner's rating is kept */
  owner: string;
  ts: Date;
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const STEP_ORDER = new Map<string, number>(STEPS.map((s, i) => [s, i]));

/** One question's tokens and cost over its models. */
function sums(q: QuestionCompleted): { input: number; output: number; cost: number | null } {
  let input = 0;
  let output = 0;
  let cost: number | null = null;
  for (const m of q.models) {
    input += m.input_tokens;
    output += m.output_tokens;
    if (m.cost_usd !== undefined) cost = (cost ?? 0) + m.cost_usd;
  }
  return { input, output, cost };
}

export class AnalyticsStore {
  private constructor(private readonly db: PgDatabase) {}

  /** Connect (a small pool of its own); `init` creates the tables. */
  static open(conn: AnalyticsConnection, log: Logger): AnalyticsStore {
    return new AnalyticsStore(new PgDatabase({
      ...conn, log, label: 'analytics', maxConnections: 3,
      migrations: { list: ANALYTICS_MIGRATIONS, versionTable: ANALYTICS_VERSION_TABLE },
    }));
  }

  init(): Promise<void> {
    return this.db.init();
  }

  close(): Promise<void> {
    return this.db.close();
  }

  /**
   * Keep one question (its text only when `keepText`); false when its request id is recorded
   * already (a redelivery), which changes nothing.
   */
  async record(q: QuestionCompleted, keepText: boolean): Promise<boolean> {
    const { input, output, cost } = sums(q);
    const durations: Record<string, number> = { ...q.durations };
    const total = durations.total ?? 0;
    return this.db.tx(async (c) => {
      const r = await c.query(
        `INSERT INTO cortado_analytics_questions
           (request_id, event_id, ts, channel, widget, username, question, intent, tables, row_count, durations, total_ms, input_tokens, output_tokens, cost_usd, code, owner)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15, $16, $17)
         ON CONFLICT (request_id) DO NOTHING`,
        [clean(q.request_id), clean(q.id), iso(q.ts), optText(q.channel), optText(q.widget), optText(q.user),
          keepText ? clean(q.question) : null, optText(q.intent), [...new Set(q.tables)].map(clean), q.row_count ?? null,
          json(durations), total, input, output, cost, optText(q.code), optText(q.owner)]);
      if (r.rowCount !== 1) return false;
      for (const m of q.models) {
        await c.query(
          `INSERT INTO cortado_analytics_models (request_id, model, calls, input_tokens, output_tokens, cost_usd)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (request_id, model) DO UPDATE SET calls = cortado_analytics_models.calls + EXCLUDED.calls,
             input_tokens = cortado_analytics_models.input_tokens + EXCLUDED.input_tokens,
             output_tokens = cortado_analytics_models.output_tokens + EXCLUDED.output_tokens,
             cost_usd = CASE WHEN EXCLUDED.cost_usd IS NULL THEN cortado_analytics_models.cost_usd
                             ELSE coalesce(cortado_analytics_models.cost_usd, 0) + EXCLUDED.cost_usd END`,
          [clean(q.request_id), clean(m.model), m.calls, m.input_tokens, m.output_tokens, m.cost_usd ?? null]);
      }
      return true;
    });
  }

  /**
   * The asker's thumbs for their question; a later one replaces the earlier. `false` (nothing
   * kept) when the question is recorded with another owner: an answer is rated by whoever asked
   * it. Feedback may come before its question: it is kept, and counts only if the owners match.
   */
  async feedback(f: FeedbackInput): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO cortado_analytics_feedback (request_id, username, owner, rating, comment, ts)
       SELECT $1, $2, $3, $4, $5, $6
       WHERE NOT EXISTS (SELECT 1 FROM cortado_analytics_questions q WHERE q.request_id = $1 AND q.owner IS NOT NULL AND q.owner <> $3)
       ON CONFLICT (request_id, owner) DO UPDATE SET username = EXCLUDED.username, rating = EXCLUDED.rating, comment = EXCLUDED.comment, ts = EXCLUDED.ts`,
      [clean(f.request_id), clean(f.user ?? ''), clean(f.owner), f.rating, optText(f.comment), f.ts.toISOString()]);
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Forget what is older than `before` (questions with their models, and feedback), feedback
   * whose question never came within ORPHAN_FEEDBACK_MS, and, when `keepText` is off, every
   * question text kept while it was on. Returns how many questions were removed.
   */
  async purge(before: Date, keepText: boolean, now: Date = new Date()): Promise<number> {
    return this.db.tx(async (c) => {
      await c.query(
        `DELETE FROM cortado_analytics_feedback f USING cortado_analytics_questions q
         WHERE q.request_id = f.request_id AND q.ts < $1`,
        [before.toISOString()]);
      const q = await c.query('DELETE FROM cortado_analytics_questions WHERE ts < $1', [before.toISOString()]);
      await c.query('DELETE FROM cortado_analytics_feedback WHERE ts < $1', [before.toISOString()]);
      await c.query(
        `DELETE FROM cortado_analytics_feedback f WHERE f.ts < $1
           AND NOT EXISTS (SELECT 1 FROM cortado_analytics_questions q WHERE q.request_id = f.request_id)`,
        [new Date(now.getTime() - ORPHAN_FEEDBACK_MS).toISOString()]);
      if (!keepText) await c.query('UPDATE cortado_analytics_questions SET question = NULL WHERE question IS NOT NULL');
      return q.rowCount ?? 0;
    });
  }

  /** The whole report over [from, to), filtered by channel, widget and user, computed by the database. */
  async report(rq: ReportQuery): Promise<Omit<AnalyticsReport, 'enabled' | 'store_questions'>> {
    // $1 from, $2 to, then the optional filters: the same WHERE for every part
    const values: unknown[] = [rq.from.toISOString(), rq.to.toISOString()];
    const conds = ['q.ts >= $1', 'q.ts < $2'];
    if (rq.channel !== undefined) conds.push(`q.channel = $${values.push(clean(rq.channel))}`);
    if (rq.widget !== undefined) conds.push(`${WIDGET} = $${values.push(clean(rq.widget))}`);
    if (rq.user !== undefined) conds.push(`q.username = $${values.push(clean(rq.user))}`);
    const where = conds.join(' AND ');
    // the top lists' LIMIT is the last parameter, given only to the statements that use it
    const top = `$${values.length + 1}`;
    const Q = 'cortado_analytics_questions q';
    const run = (sql: string): Promise<Array<Record<string, unknown>>> =>
      this.db.query<Record<string, unknown>>(sql, sql.includes(top) ? [...values, rq.top] : values).then((r) => r.rows);
    const text = (v: unknown): { question?: string } => (rq.questions && typeof v === 'string' ? { question: v } : {});
    const opt = <K extends string>(k: K, v: unknown): Partial<Record<K, string>> => (typeof v === 'string' ? { [k]: v } as Record<K, string> : {});

    const [totals, perDay, steps, errors, models, modelsPerDay, channels, widgets, tables, users, slowest, disliked] = await Promise.all([
      run(`SELECT count(*) AS questions, count(q.code) AS errors, count(DISTINCT q.username) AS users,
                  coalesce(sum(q.input_tokens), 0) AS input_tokens, coalesce(sum(q.output_tokens), 0) AS output_tokens,
                  coalesce(sum(q.cost_usd), 0)::float8 AS cost_usd, count(*) FILTER (WHERE q.intent = 'clarify') AS clarifications,
                  (SELECT count(*) FROM cortado_analytics_feedback f JOIN ${Q} ON ${FEEDBACK_OF_Q} WHERE f.rating = 'up' AND ${where}) AS likes,
                  (SELECT count(*) FROM cortado_analytics_feedback f JOIN ${Q} ON ${FEEDBACK_OF_Q} WHERE f.rating = 'down' AND ${where}) AS dislikes
           FROM ${Q} WHERE ${where}`),
      run(`SELECT to_char(d.day, 'YYYY-MM-DD') AS day, count(q.request_id) AS questions, count(q.code) AS errors,
                  coalesce(sum(q.input_tokens), 0) AS input_tokens, coalesce(sum(q.output_tokens), 0) AS output_tokens,
                  coalesce(sum(q.cost_usd), 0)::float8 AS cost_usd
           FROM generate_series(($1::timestamptz AT TIME ZONE 'UTC')::date, (($2::timestamptz - interval '1 microsecond') AT TIME ZONE 'UTC')::date, interval '1 day') AS d(day)
           LEFT JOIN ${Q} ON (q.ts AT TIME ZONE 'UTC')::date = d.day::date AND ${where}
           GROUP BY d.day ORDER BY d.day`),
      run(`SELECT s.key AS step, count(*) AS count,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value::float8) AS p50_ms,
                  percentile_cont(0.95) WITHIN GROUP (ORDER BY s.value::float8) AS p95_ms
           FROM ${Q} CROSS JOIN LATERAL jsonb_each_text(q.durations) AS s(key, value)
           WHERE ${where} GROUP BY s.key`),
      run(`SELECT q.code, count(*) AS count FROM ${Q} WHERE ${where} AND q.code IS NOT NULL GROUP BY q.code ORDER BY count(*) DESC, q.code`),
      run(`SELECT m.model, sum(m.calls) AS calls, sum(m.input_tokens) AS input_tokens, sum(m.output_tokens) AS output_tokens,
                  coalesce(sum(m.cost_usd), 0)::float8 AS cost_usd
           FROM cortado_analytics_models m JOIN ${Q} USING (request_id) WHERE ${where}
           GROUP BY m.model ORDER BY sum(m.input_tokens + m.output_tokens) DESC, m.model`),
      run(`SELECT to_char((q.ts AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, m.model,
                  sum(m.input_tokens) AS input_tokens, sum(m.output_tokens) AS output_tokens, coalesce(sum(m.cost_usd), 0)::float8 AS cost_usd
           FROM cortado_analytics_models m JOIN ${Q} USING (request_id) WHERE ${where}
           GROUP BY 1, m.model ORDER BY 1, m.model`),
      run(`SELECT coalesce(q.channel, 'unknown') AS channel, count(*) AS questions FROM ${Q} WHERE ${where}
           GROUP BY 1 ORDER BY count(*) DESC, 1`),
      run(`SELECT ${WIDGET} AS widget, count(*) AS questions FROM ${Q} WHERE ${where}
           GROUP BY 1 ORDER BY count(*) DESC, 1`),
      run(`SELECT t.name AS "table", count(*) AS questions FROM ${Q} CROSS JOIN LATERAL unnest(q.tables) AS t(name)
           WHERE ${where} GROUP BY t.name ORDER BY count(*) DESC, t.name LIMIT ${top}`),
      run(`SELECT q.username AS "user", count(*) AS questions, count(q.code) AS errors FROM ${Q}
           WHERE ${where} AND q.username IS NOT NULL GROUP BY q.username ORDER BY count(*) DESC, q.username LIMIT ${top}`),
      run(`SELECT q.request_id, q.ts, q.total_ms, q.channel, q.widget, q.username, q.question FROM ${Q}
           WHERE ${where} ORDER BY q.total_ms DESC, q.ts DESC LIMIT ${top}`),
      run(`SELECT q.request_id, q.ts, q.channel, q.widget, q.username, q.question, count(*) AS downs,
                  (array_agg(f.comment ORDER BY f.ts DESC) FILTER (WHERE f.comment IS NOT NULL))[1] AS comment
           FROM cortado_analytics_feedback f JOIN ${Q} ON ${FEEDBACK_OF_Q}
           WHERE f.rating = 'down' AND ${where}
           GROUP BY q.request_id ORDER BY count(*) DESC, max(f.ts) DESC LIMIT ${top}`),
    ]);

    const t = totals[0] ?? {};
    return {
      range: { from: rq.from.toISOString(), to: rq.to.toISOString() },
      totals: {
        questions: num(t.questions), errors: num(t.errors), users: num(t.users),
        input_tokens: num(t.input_tokens), output_tokens: num(t.output_tokens), cost_usd: num(t.cost_usd),
        likes: num(t.likes), dislikes: num(t.dislikes), clarifications: num(t.clarifications),
      },
      per_day: perDay.map((r) => ({
        day: String(r.day), questions: num(r.questions), errors: num(r.errors),
        input_tokens: num(r.input_tokens), output_tokens: num(r.output_tokens), cost_usd: num(r.cost_usd),
      })),
      steps: steps
        .map((r) => ({ step: String(r.step), count: num(r.count), p50_ms: num(r.p50_ms), p95_ms: num(r.p95_ms) }))
        .sort((a, b) => (STEP_ORDER.get(a.step) ?? STEPS.length) - (STEP_ORDER.get(b.step) ?? STEPS.length) || (a.step < b.step ? -1 : a.step > b.step ? 1 : 0)),
      errors: errors.map((r) => ({ code: String(r.code), count: num(r.count) })),
      models: models.map((r) => ({
        model: String(r.model), calls: num(r.calls), input_tokens: num(r.input_tokens), output_tokens: num(r.output_tokens), cost_usd: num(r.cost_usd),
      })),
      models_per_day: modelsPerDay.map((r) => ({
        day: String(r.day), model: String(r.model), input_tokens: num(r.input_tokens), output_tokens: num(r.output_tokens), cost_usd: num(r.cost_usd),
      })),
      channels: channels.map((r) => ({ channel: String(r.channel), questions: num(r.questions) })),
      widgets: widgets.map((r) => ({ widget: String(r.widget), questions: num(r.questions) })),
      tables: tables.map((r) => ({ table: String(r.table), questions: num(r.questions) })),
      users: users.map((r) => ({ user: String(r.user), questions: num(r.questions), errors: num(r.errors) })),
      slowest: slowest.map((r) => ({
        request_id: String(r.request_id), ts: iso(r.ts as Date), total_ms: num(r.total_ms),
        ...opt('channel', r.channel), ...opt('widget', r.widget), ...opt('user', r.username), ...text(r.question),
      })),
      disliked: disliked.map((r) => ({
        request_id: String(r.request_id), ts: iso(r.ts as Date),
        ...opt('comment', r.comment), ...opt('channel', r.channel), ...opt('widget', r.widget), ...opt('user', r.username), ...text(r.question),
      })),
    };
  }
}

/** The analytics connection from the config section, or CONFIG_INVALID naming what is wrong. */
export function analyticsConnection(section: { backend: string; storage?: string | undefined; postgresql: AnalyticsConnection }): AnalyticsConnection {
  const backend = (section.storage ?? section.backend).trim().toLowerCase();
  if (backend !== 'postgresql') {
    const key = section.storage !== undefined ? 'analytics.storage' : 'analytics.backend';
    throw new CortadoError('CONFIG_INVALID', `${key} is "${section.storage ?? section.backend}": analytics are stored in PostgreSQL only (set it to postgresql, and analytics.postgresql.* to the database)`);
  }
  return { ...section.postgresql };
}
