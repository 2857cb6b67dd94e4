/**
 * Security alerts: every query.generated / query.executed / query.rejected event is scored
 * (score.ts); an alert fires when `mcp.security_alerts.enabled`, the event's widget type is in
 * `apply_to`, and the score is above `risk_threshold` or a column matches an enabled mask
 * rule. A fired alert is a warn log line (never row values, the SQL only as a hash), an
 * `alert.raised` event, and, when `email.enabled`, an e-mail to `notify_emails` through the
 * mailer.
 *
 * - One alert per question (request id), whatever the number of its events (generated, then
 *   executed or rejected, self-corrections) and however often one is redelivered: the first
 *   copy to claim the request id in JetStream KV raises it, every other copy and every
 *   redelivery finds the claim (kept an hour).
 * - Best-effort and off the request path: it reads the event stream after the fact, and
 *   nothing here can delay or refuse a query. The mail goes out after the event is
 *   acknowledged; a crash between the claim and the mail loses that mail, never doubles it.
 * - Events older than STALE_MS when read (the first start against a stream that already
 *   holds a week of events, or a long outage) are not scored.
 */
import { createHash } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import type { Kv } from '../../runtime/kv.js';
import type { Logger } from '../../runtime/log.js';
import type { Channel } from '../../protocol/schemas/common.js';
import type { QueryExecuted, QueryGenerated, QueryRejected } from '../../protocol/schemas/events.js';
import type { AlertRaised } from '../../protocol/schemas/policy.js';
import type { EventOf } from '../../protocol/define.js';
import type { SqlIntrospectReply } from '../../protocol/schemas/sql.js';
import { toCortadoError } from '../../protocol/errors.js';
import {
  AlertRaisedEvt, MailSend, MaskRulesList, QueryExecutedEvt, QueryGeneratedEvt, QueryRejectedEvt, SqlIntrospect,
} from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { BURST_WINDOW_MS, score, type TableInfo } from './score.js';

export const STALE_MS = 60 * 60_000;
/** how long a claim (one alert per request id) and a burst window count are kept */
export const STATE_TTL_MS = 60 * 60_000;
const RULES_TTL_MS = 10_000;
const SCHEMA_TTL_MS = 10 * 60_000;
const RETRY_AFTER_FAILURE_MS = 10_000;
/** how long one event waits for the first schema or rule list before it is scored without */
const FIRST_FETCH_WAIT_MS = 2_000;
const SQL_IN_MAIL = 2_000;
const SQL_IN_EVENT = 8_000;

// ---- widget types -------------------------------------------------------------------------

/**
 * The widget type of a question (docs/ui.md "Widget types"): the `widget` its event carries
 * (the edge sets it per route: /query → assistant, /auth/query → agent, the dashboard page's
 * /api/query → dashboard, other /api/query callers → api, MCP → mcp), else the type of its
 * channel below.
 */
export const WIDGET_TYPES: Readonly<Record<Channel, string>> = {
  mcp: 'mcp',
  auth: 'agent',
  legacy: 'assistant',
  api: 'api',
  web: 'dashboard',
  schedule: 'schedule',
};

/**
 * Older names `apply_to` still takes, each meaning one widget type: the channel names `legacy`
 * and `auth`, and `web` (the documented type of the pages before the widgets had their own).
 */
export const WIDGET_ALIASES: Readonly<Record<string, string>> = { legacy: 'assistant', auth: 'agent', web: 'dashboard' };

export function widgetType(channel: Channel | undefined, widget?: string): string {
  if (widget) return widget;
  return channel ? WIDGET_TYPES[channel] : 'unknown';
}

/** Whether `apply_to` names this question's widget type (or an alias of it), or is `*`. */
export function appliesTo(channel: Channel | undefined, applyTo: readonly string[], widget?: string): boolean {
  const wanted = new Set(applyTo.map((s) => s.trim().toLowerCase()).map((s) => WIDGET_ALIASES[s] ?? s));
  if (wanted.has('*')) return true;
  if (channel === undefined && !widget) return false;
  return wanted.has(widgetType(channel, widget));
}

// ---- small caches -------------------------------------------------------------------------

/** A bounded map that forgets its oldest entries. */
export class Recent<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max = 10_000) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  has(key: string): boolean {
    return this.map.has(key);
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
}

/**
 * A value fetched over the bus and kept for `ttlMs`; one fetch at a time; a failed fetch keeps
 * the last good value (or `fallback`) and is retried after a pause. `get(waitMs)` never waits
 * longer than `waitMs` for a fetch in progress.
 */
export class Cached<T> {
  private value: T | undefined;
  private at = 0;
  private failedAt = 0;
  private inflight: Promise<void> | undefined;
  /** counts clear(): an answer asked for before the latest clear is not kept */
  private generation = 0;

  constructor(
    private readonly fetch: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly onError: (err: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  async get(waitMs: number): Promise<T | undefined> {
    const t = this.now();
    const fresh = this.value !== undefined && t - this.at < this.ttlMs;
    const resting = t - this.failedAt < RETRY_AFTER_FAILURE_MS;
    if (!fresh && !resting && !this.inflight) {
      const generation = this.generation;
      const p: Promise<void> = this.fetch()
        .then((v) => { if (generation === this.generation) { this.value = v; this.at = this.now(); } })
        .catch((err: unknown) => { this.failedAt = this.now(); this.onError(err); })
        .finally(() => { if (this.inflight === p) this.inflight = undefined; });
      this.inflight = p;
    }
    // a stale value is used while it refreshes; only the very first fetch is waited for
    if (this.inflight && this.value === undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.inflight, new Promise<void>((r) => { timer = setTimeout(r, waitMs); })]);
      clearTimeout(timer);
    }
    return this.value;
  }

  /** forget the value: the next get fetches again (one under way is not kept: it may predate the change) */
  clear(): void {
    this.generation++;
    this.value = undefined;
    this.at = 0;
    this.failedAt = 0;
    this.inflight = undefined;
  }
}

/** What the schema knows of each relation, for SELECT * and row estimates. */
export class SchemaIndex {
  private readonly byName = new Map<string, Array<{ schema: string; info: TableInfo }>>();
  constructor(private readonly defaultSchema: string, tables: SqlIntrospectReply['tables']) {
    for (const t of tables) {
      const key = t.name.toLowerCase();
      const list = this.byName.get(key) ?? [];
      const info: TableInfo = { columns: t.columns.map((c) => c.name) };
      if (t.row_estimate !== undefined) info.row_estimate = t.row_estimate;
      list.push({ schema: t.schema.toLowerCase(), info });
      this.byName.set(key, list);
    }
  }
  lookup(parts: string[]): TableInfo | undefined {
    const list = this.byName.get(parts[parts.length - 1] ?? '');
    if (!list) return undefined;
    const schema = parts.length >= 2 ? parts[parts.length - 2] : undefined;
    if (schema !== undefined) return list.find((t) => t.schema === schema)?.info;
    return (list.find((t) => t.schema === this.defaultSchema.toLowerCase()) ?? list[0])?.info;
  }
}

// ---- shared state: claims and question counts ----------------------------------------------

export interface AlertState {
  /** true for the first caller for this request id (within STATE_TTL_MS), false after */
  claim(requestId: string): Promise<boolean>;
  /** count one question of this user in the window of `ts`; the count so far, this one included */
  countQuestion(user: string, ts: number): Promise<number>;
  /** the count in the window of `ts`, without adding */
  questions(user: string, ts: number): Promise<number>;
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const windowOf = (ts: number): number => Math.floor(ts / BURST_WINDOW_MS);

/** One process's memory: the fallback when JetStream KV is not there, and the unit tests' state. */
export class MemoryAlertState implements AlertState {
  private readonly claims = new Recent<true>(50_000);
  private readonly counts = new Recent<number>(50_000);
  async claim(requestId: string): Promise<boolean> {
    if (this.claims.has(requestId)) return false;
    this.claims.set(requestId, true);
    return true;
  }
  async countQuestion(user: string, ts: number): Promise<number> {
    const key = `${user}\n${windowOf(ts)}`;
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    return n;
  }
  async questions(user: string, ts: number): Promise<number> {
    return this.counts.get(`${user}\n${windowOf(ts)}`) ?? 0;
  }
}

/** In the shared bucket (runtime/kv.ts): every alerts copy in every process shares the claims and the counts. */
export class KvAlertState implements AlertState {
  constructor(private readonly kv: Kv<number>) {}

  async claim(requestId: string): Promise<boolean> {
    return this.kv.create(`a.${sha(requestId).slice(0, 40)}`, Date.now());
  }

  async countQuestion(user: string, ts: number): Promise<number> {
    return (await this.kv.increment(this.countKey(user, ts))) ?? 0;
  }

  async questions(user: string, ts: number): Promise<number> {
    return (await this.kv.get(this.countKey(user, ts))) ?? 0;
  }

  private countKey(user: string, ts: number): string {
    return `q.${sha(user).slice(0, 40)}.${windowOf(ts)}`;
  }
}

/** KV first; when it fails, this process's memory (logged once), so an alert is never lost to it. */
export class FallbackAlertState implements AlertState {
  private readonly memory = new MemoryAlertState();
  private warned = false;
  constructor(private readonly primary: AlertState | undefined, private readonly log: Logger) {}

  private async run<T>(f: (s: AlertState) => Promise<T>): Promise<T> {
    if (this.primary) {
      try {
        return await f(this.primary);
      } catch (err) {
        if (!this.warned) {
          this.warned = true;
          this.log.warn({ err: (err as Error).message }, 'alert state in JetStream KV failed: counting in this process only');
        }
      }
    }
    return f(this.memory);
  }
  claim(requestId: string): Promise<boolean> { return this.run((s) => s.claim(requestId)); }
  countQuestion(user: string, ts: number): Promise<number> { return this.run((s) => s.countQuestion(user, ts)); }
  questions(user: string, ts: number): Promise<number> { return this.run((s) => s.questions(user, ts)); }
}

// ---- the actor's logic --------------------------------------------------------------------

export interface AlertsDeps {
  bus: Bus;
  config: Config;
  log: Logger;
  state: AlertState;
  /** the field_pattern of every enabled mask rule */
  maskPatterns: Cached<string[]>;
  schema: Cached<SchemaIndex>;
  /** request id → channel, from the events that carry one (the executor's rejections do not) */
  /** the channel and widget of each recent question (a rejection told by the executor names neither) */
  channels: Recent<{ channel: Channel; widget?: string }>;
  /** request ids this process already alerted for (saves a KV round trip) */
  alerted: Recent<true>;
  /** the mails and events still being sent, awaited on stop */
  pending: Set<Promise<void>>;
  now?: () => number;
}

export function createDeps(bus: Bus, config: Config, log: Logger, kv: Kv<number> | undefined): AlertsDeps {
  const warnOnce = (what: string) => {
    let last = 0;
    return (err: unknown) => {
      if (Date.now() - last < 60_000) return;
      last = Date.now();
      log.warn({ err: toCortadoError(err).message }, `${what}: alerts are scored without it for now`);
    };
  };
  return {
    bus, config, log,
    state: new FallbackAlertState(kv ? new KvAlertState(kv) : undefined, log),
    maskPatterns: new Cached(async () => {
      const { rules } = await bus.request(MaskRulesList, {}, { requestId: 'alerts-mask-rules' }, { timeoutMs: 5_000 });
      return rules.filter((r) => r.enabled).map((r) => r.field_pattern);
    }, RULES_TTL_MS, warnOnce('cannot read the mask rules')),
    schema: new Cached(async () => {
      const s = await bus.request(SqlIntrospect, {}, { requestId: 'alerts-schema' });
      return new SchemaIndex(s.default_schema, s.tables);
    }, SCHEMA_TTL_MS, warnOnce('cannot read the schema')),
    channels: new Recent(),
    alerted: new Recent(),
    pending: new Set(),
  };
}

/** The events the alerts read; `bus.consume` checked each against its schema and hands it on typed. */
export const QUERY_EVENTS = [QueryGeneratedEvt, QueryExecutedEvt, QueryRejectedEvt] as const;
export type QueryEvent = EventOf<(typeof QUERY_EVENTS)[number]>;

type Scored = { kind: 'generated'; e: QueryGenerated } | { kind: 'executed'; e: QueryExecuted } | { kind: 'rejected'; e: QueryRejected };

function scored(event: QueryEvent): Scored {
  switch (event.subject) {
    case QueryGeneratedEvt.subject: return { kind: 'generated', e: event.payload };
    case QueryExecutedEvt.subject: return { kind: 'executed', e: event.payload };
    case QueryRejectedEvt.subject: return { kind: 'rejected', e: event.payload };
  }
}

export interface Decision {
  fired: boolean;
  score?: number;
  /** why nothing fired, for tests and debug logs */
  skipped?: 'disabled' | 'stale' | 'not_in_apply_to' | 'already_alerted' | 'below_threshold';
  alert?: AlertRaised;
}

/**
 * One event of the stream. Resolves once the decision is made (the e-mail and the
 * `alert.raised` event follow in the background, tracked in deps.pending). Throws only when
 * the shared state cannot be reached at all, so the event comes again.
 */
export async function onEvent(event: QueryEvent, deps: AlertsDeps, ctx: Ctx): Promise<Decision> {
  const { kind, e } = scored(event);
  if (e.channel) deps.channels.set(e.request_id, { channel: e.channel, ...(e.widget ? { widget: e.widget } : {}) });
  const cfg = deps.config.mcp.security_alerts;
  if (!cfg.enabled) return { fired: false, skipped: 'disabled' };
  const now = deps.now?.() ?? Date.now();
  const ts = Date.parse(e.ts);
  const at = Number.isFinite(ts) ? ts : now;
  if (now - at > STALE_MS) return { fired: false, skipped: 'stale' };

  const user = e.user ?? ctx.user;
  let recent = 0;
  if (user) recent = kind === 'generated' && e.attempt === 0 ? await deps.state.countQuestion(user, at) : await deps.state.questions(user, at);

  const seen = e.channel ? { channel: e.channel, widget: e.widget } : deps.channels.get(e.request_id);
  const channel = seen?.channel;
  if (!appliesTo(channel, cfg.apply_to, seen?.widget)) return { fired: false, skipped: 'not_in_apply_to' };
  if (deps.alerted.has(e.request_id)) return { fired: false, skipped: 'already_alerted' };

  const [patterns, schema] = await Promise.all([deps.maskPatterns.get(FIRST_FETCH_WAIT_MS), deps.schema.get(FIRST_FETCH_WAIT_MS)]);
  const result = score({
    sql: e.sql,
    maskPatterns: patterns ?? [],
    ...(schema ? { table: (parts: string[]) => schema.lookup(parts) } : {}),
    ...(kind === 'rejected' ? { rejection: { code: e.code, reason: e.reason, ...(e.kind ? { kind: e.kind } : {}) } } : {}),
    ...(kind === 'executed' ? { rows: { count: e.row_count, truncated: e.truncated, maxLimit: deps.config.query.max_limit } } : {}),
    // the relations the guard read (query.executed carries them): not lexed again
    ...(kind === 'executed' && e.tables ? { relations: e.tables.map((t) => t.toLowerCase().split('.')) } : {}),
    recentQuestions: recent,
  });
  const reasons: string[] = [];
  if (result.score > cfg.risk_threshold) reasons.push('score');
  if (result.masked.length) reasons.push('masked_column');
  const line = { rid: e.request_id, event: kind, score: result.score, threshold: cfg.risk_threshold, factors: result.factors.map((f) => f.name) };
  if (!reasons.length) {
    deps.log.debug(line, 'query scored: no alert');
    return { fired: false, score: result.score, skipped: 'below_threshold' };
  }
  if (!(await deps.state.claim(e.request_id))) {
    deps.alerted.set(e.request_id, true);
    return { fired: false, score: result.score, skipped: 'already_alerted' };
  }
  deps.alerted.set(e.request_id, true);

  const widget = widgetType(channel, seen?.widget);
  deps.log.warn({
    ...line, user, widget_type: widget, reasons, masked: result.masked,
    sql_sha256: sha(e.sql).slice(0, 16), sql_chars: e.sql.length,
  }, 'security alert');

  const alert: AlertRaised = {
    // one alert per request id: the same id for a second attempt lets JetStream drop it too
    id: `alert-${sha(e.request_id).slice(0, 32)}`,
    ts: new Date(now).toISOString(),
    request_id: e.request_id,
    ...(user ? { user } : {}),
    ...(channel ? { channel } : {}),
    widget_type: widget,
    score: result.score,
    factors: result.factors,
    reasons,
    sql: e.sql.length > SQL_IN_EVENT ? `${e.sql.slice(0, SQL_IN_EVENT)}…` : e.sql,
    notified: [],
  };
  const work = notify(alert, deps).catch((err: unknown) => {
    deps.log.warn({ rid: e.request_id, err: toCortadoError(err).message }, 'cannot finish the security alert');
  });
  deps.pending.add(work);
  void work.finally(() => deps.pending.delete(work));
  return { fired: true, score: result.score, alert };
}

/** The e-mail (when email.enabled), then the alert.raised event with who was notified. */
async function notify(alert: AlertRaised, deps: AlertsDeps): Promise<void> {
  const { config, bus, log } = deps;
  const to = [...new Set(config.mcp.security_alerts.notify_emails.map((s) => s.trim()).filter(Boolean))];
  const ctx: Ctx = { requestId: alert.request_id, ...(alert.user ? { user: alert.user } : {}) };
  if (config.email.enabled && to.length) {
    const mail = alertMail(alert, config);
    const per = Math.max(1, config.email.max_recipients_per_email);
    for (let i = 0; i < to.length; i += per) {
      const chunk = to.slice(i, i + per);
      try {
        const reply = await bus.request(MailSend, { to: chunk, ...mail }, ctx);
        if (reply.sent) alert.notified.push(...chunk);
      } catch (err) {
        const e = toCortadoError(err);
        log.warn({ rid: alert.request_id, code: e.code, err: e.message, recipients: chunk.length }, 'security alert e-mail not sent');
      }
    }
  }
  bus.publish(AlertRaisedEvt, alert, ctx);
}

export function alertMail(alert: AlertRaised, config: Config): { subject: string; text: string; html: string } {
  const subject = `[${config.app.name}] Security alert: risk ${alert.score}/100 (${alert.widget_type})`;
  const sql = alert.sql ?? '';
  const shownSql = sql.length > SQL_IN_MAIL ? `${sql.slice(0, SQL_IN_MAIL)}…` : sql;
  const why = alert.reasons.map((r) => (r === 'score'
    ? `the risk score ${alert.score} is above the threshold ${config.mcp.security_alerts.risk_threshold}`
    : 'the query reads a column that a mask rule protects'));
  const lines = [
    `A query looked sensitive: ${why.join('; and ')}.`,
    '',
    `Time:        ${alert.ts}`,
    `User:        ${alert.user ?? '(unknown)'}`,
    `Widget:      ${alert.widget_type}`,
    `Request id:  ${alert.request_id}`,
    `Risk score:  ${alert.score}/100`,
    '',
    'Factors:',
    ...alert.factors.map((f) => `  +${f.points}  ${f.name}${f.detail ? ` (${f.detail})` : ''}`),
    '',
    'SQL:',
    shownSql,
    '',
    'The query was not blocked: alerts never stop a query.',
  ];
  const text = lines.join('\n');
  const html = `<!doctype html><html><body><pre style="font-family:ui-monospace,monospace">${escapeHtml(text)}</pre></body></html>`;
  return { subject, text, html };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' })[c]!);
}
