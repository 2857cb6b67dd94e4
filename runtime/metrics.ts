/**
 * The metrics of this process, in the Prometheus text format (prom-client): one registry per
 * process, read by `GET /metrics` on the edge or by the process's own metrics listener
 * (cli/metrics-listener.ts, `metrics.listen`). Prometheus scrapes every process: each shows only
 * what it did itself (an edge's /metrics has no executor series unless it runs the executor).
 *
 * Everything here is recorded through small functions (`observeHttp`, `busSeries`,
 * `observeModelCall`, …) so a caller never builds a label set on the hot path: a series'
 * children are made once per label value and kept.
 *
 * Label cardinality is bounded: routes are patterns (`/api/tables/:name`, never a raw path),
 * subjects are the definitions' subjects (never a progress subject with a request id), and any
 * label holds at most MAX_VALUES distinct values: the ones after that are counted as `other`.
 *
 * `setMetricsEnabled(false)` (config `metrics.enabled: false`) makes every recording function a
 * no-op and leaves the registry empty of Node's default metrics.
 */
import client from 'prom-client';
import { pacedWaiting } from './pacer.js';

/** distinct values a label may take before the rest are counted as `other` */
export const MAX_VALUES = 200;
export const OTHER = 'other';

export const registry = new client.Registry();

let enabled = true;
let defaultsOn = false;

/** Turn recording on or off for this process; Node's default metrics are collected once it is on. */
export function setMetricsEnabled(on: boolean): void {
  enabled = on;
  if (on && !defaultsOn) {
    defaultsOn = true;
    client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  }
}

export function metricsEnabled(): boolean {
  return enabled;
}

/** The exposition: content type and text. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}

/** A label's values, bounded: past `max` distinct ones, `other`. */
export class LabelGuard {
  private readonly seen = new Set<string>();
  constructor(private readonly max = MAX_VALUES) {}

  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return OTHER;
    this.seen.add(v);
    return v;
  }
}

const guards = {
  route: new LabelGuard(),
  subject: new LabelGuard(),
  model: new LabelGuard(50),
  code: new LabelGuard(100),
  reason: new LabelGuard(50),
  rule: new LabelGuard(100),
  consumer: new LabelGuard(50),
  strategy: new LabelGuard(20),
  engine: new LabelGuard(10),
  parser: new LabelGuard(10),
};

const SECONDS_FAST = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SECONDS_MODEL = [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 60];
const SECONDS_LATE = [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 3600];

const reg = [registry];

// ---- series cheap enough for every request -----------------------------------------------------
//
// prom-client validates and hashes the label values on every observation, even through a child
// from `labels()`: a few hundred nanoseconds each, several per bus hop. The series recorded on
// every request (HTTP, the bus) are kept here as plain numbers per label set instead, and turned
// into the exposition only when scraped (`get`, which the registry calls like any metric's).

type Labels = Record<string, string>;
interface Sample { labels: Labels; value: number; metricName?: string }

const keyOf = (labels: Labels): string => Object.values(labels).join('\u0001');

/** A counter or gauge whose cells are plain numbers. */
class FastValues {
  private readonly cells = new Map<string, { labels: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge') {
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** The cell of one label set (the same one for the same labels); keep it, change `value` directly. */
  cell(labels: Labels): { value: number } {
    const key = keyOf(labels);
    let c = this.cells.get(key);
    if (!c) this.cells.set(key, (c = { labels, value: 0 }));
    return c;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values: [...this.cells.values()].map((c) => ({ labels: c.labels, value: c.value })) };
  }
}

/** A histogram whose cells are plain arrays. */
class FastHistogram {
  readonly type = 'histogram';
  private readonly cells = new Map<string, { labels: Labels; counts: Float64Array; sum: number; count: number }>();
  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[]) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  /** The cell of one label set (the same one for the same labels): `observe(seconds)`. */
  cell(labels: Labels): { observe(v: number): void } {
    const key = keyOf(labels);
    let c = this.cells.get(key);
    if (!c) this.cells.set(key, (c = { labels, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 }));
    const cell = c;
    const bounds = this.bounds;
    return {
      observe(v: number): void {
        cell.sum += v;
        cell.count++;
        for (let i = 0; i < bounds.length; i++) {
          if (v <= bounds[i]!) {
            cell.counts[i]!++;
            return;
          }
        }
      },
    };
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    for (const c of this.cells.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += c.counts[i]!;
        values.push({ labels: { ...c.labels, le: String(le) }, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...c.labels, le: '+Inf' }, value: c.count, metricName: `${this.name}_bucket` });
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: 'sum', values };
  }
}

// ---- HTTP ------------------------------------------------------------------------------------

const httpRequests = new FastValues('cortado_http_requests_total', 'HTTP requests answered, by route pattern, method and status', 'counter');
const httpDuration = new FastHistogram('cortado_http_request_duration_seconds', 'time from the request to its answer (a stream: to its end), by route pattern and method', SECONDS_FAST);

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** route → `method status` → the cells of that request kind */
const httpCells = new Map<string, Map<string, { requests: { value: number }; duration: { observe(v: number): void } }>>();

/** One answered HTTP request; `route` is the matched pattern, or `(none)` when no route ran. */
export function observeHttp(route: string, method: string, status: number, seconds: number): void {
  if (!enabled) return;
  let byRoute = httpCells.get(route);
  if (!byRoute) httpCells.set(route, (byRoute = new Map()));
  const key = `${method} ${status}`;
  let cells = byRoute.get(key);
  if (!cells) {
    const r = guards.route.value(route);
    const m = METHODS.has(method) ? method : OTHER;
    cells = { requests: httpRequests.cell({ route: r, method: m, status: String(status) }), duration: httpDuration.cell({ route: r, method: m }) };
    byRoute.set(key, cells);
  }
  cells.requests.value++;
  cells.duration.observe(seconds);
}

// ---- the bus ---------------------------------------------------------------------------------

/** Which end of a bus message: the requester, the handler, or a taker of an event. */
export type BusSide = 'client' | 'server' | 'event';

const busDuration = new FastHistogram('cortado_bus_request_duration_seconds', 'bus requests by subject: client (waiting for the answer) and server (handling it)', SECONDS_FAST);
const eventDuration = new FastHistogram('cortado_bus_event_duration_seconds', 'events handled (on, consume) by subject', SECONDS_FAST);
const busInFlight = new FastValues('cortado_bus_in_flight', 'bus requests under way now, by subject and side (and events being handled)', 'gauge');
const busErrors = new FastValues('cortado_bus_errors_total', 'bus requests and events that ended in an error, by subject, side and error code', 'counter');

/** The series of one subject at one side, made once. */
export interface BusSeries {
  /** a request starts: in flight + 1 */
  enter(): void;
  /** it ended after `ms`, with an error code or none */
  leave(ms: number, code?: string): void;
}

const seriesCache: Record<BusSide, Map<string, BusSeries>> = { client: new Map(), server: new Map(), event: new Map() };

/** The series of one subject at one side (made once), or undefined while metrics are off. */
export function busSeries(subject: string, side: BusSide): BusSeries | undefined {
  if (!enabled) return undefined;
  let s = seriesCache[side].get(subject);
  if (s) return s;
  const subj = guards.subject.value(subject);
  const hist = side === 'event' ? eventDuration.cell({ subject: subj }) : busDuration.cell({ subject: subj, side });
  const gauge = busInFlight.cell({ subject: subj, side });
  const errors = new Map<string, { value: number }>();
  s = {
    enter: () => { gauge.value++; },
    leave: (ms, code) => {
      gauge.value--;
      hist.observe(ms / 1000);
      if (!code) return;
      let e = errors.get(code);
      if (!e) errors.set(code, (e = busErrors.cell({ subject: subj, side, code: guards.code.value(code) })));
      e.value++;
    },
  };
  seriesCache[side].set(subject, s);
  return s;
}

// ---- outbox and event consumers --------------------------------------------------------------

/** What a bus says of its outbox; every bus of the process adds its own (tests run several). */
const outboxes = new Set<() => { waiting: number; oldestMs: number; dropped: number }>();

/** Count this bus's outbox in the gauges; the returned function stops it (the bus closed). */
export function registerOutbox(stats: () => { waiting: number; oldestMs: number; dropped: number }): () => void {
  outboxes.add(stats);
  return () => outboxes.delete(stats);
}

new client.Gauge({
  name: 'cortado_outbox_depth', help: 'durable events waiting for JetStream\'s acknowledgement in this process',
  registers: reg,
  collect() {
    let n = 0;
    for (const s of outboxes) n += s().waiting;
    this.set(n);
  },
});
new client.Gauge({
  name: 'cortado_outbox_oldest_seconds', help: 'how long the oldest waiting durable event has waited',
  registers: reg,
  collect() {
    let ms = 0;
    for (const s of outboxes) ms = Math.max(ms, s().oldestMs);
    this.set(ms / 1000);
  },
});
new client.Gauge({
  name: 'cortado_outbox_dropped', help: 'durable events dropped because the outbox was over its limit, since the start',
  registers: reg,
  collect() {
    let n = 0;
    for (const s of outboxes) n += s().dropped;
    this.set(n);
  },
});

// ---- pacing (runtime/pacer.ts) ----------------------------------------------------------------

new client.Gauge({
  name: 'cortado_paced_waiting', help: 'steps of work waiting for their turn of the event loop (a burst being spread; steadily high: this process is out of CPU)',
  registers: reg,
  collect() {
    this.set(pacedWaiting());
  },
});

/** how often the pending count of a durable consumer is asked of JetStream, at most */
export const CONSUMER_LAG_EVERY_MS = 10_000;
const LAG_ASK_TIMEOUT_MS = 2_000;

interface LagSource {
  ask(): Promise<number | undefined>;
  value: number | undefined;
  at: number;
}
const lagSources = new Map<string, Set<LagSource>>();

/**
 * A durable consumer this process reads (audit, alerts, analytics): `ask` gives its pending
 * count (stored, not yet acknowledged), or undefined when it does not exist now. Asked when
 * scraped, at most every CONSUMER_LAG_EVERY_MS. The returned function stops it.
 */
export function registerConsumerLag(consumer: string, ask: () => Promise<number | undefined>): () => void {
  const name = guards.consumer.value(consumer);
  let set = lagSources.get(name);
  if (!set) lagSources.set(name, (set = new Set()));
  const src: LagSource = { ask, value: undefined, at: 0 };
  set.add(src);
  return () => {
    set.delete(src);
    if (set.size === 0) lagSources.delete(name);
  };
}

async function refreshLag(src: LagSource): Promise<void> {
  if (Date.now() - src.at < CONSUMER_LAG_EVERY_MS) return;
  src.at = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((r) => { timer = setTimeout(() => r(undefined), LAG_ASK_TIMEOUT_MS); });
  src.value = await Promise.race([src.ask().catch(() => undefined), timeout]);
  clearTimeout(timer);
}

new client.Gauge({
  name: 'cortado_event_consumer_pending', help: 'events of the stream a durable consumer has not acknowledged yet (asked of JetStream at most every 10 s)',
  labelNames: ['consumer'] as const, registers: reg,
  async collect() {
    this.reset();
    await Promise.all([...lagSources.values()].flatMap((set) => [...set].map(refreshLag)));
    for (const [name, set] of lagSources) {
      // copies of a consumer in this process read the same durable: the largest answer counts
      const values = [...set].map((s) => s.value).filter((v): v is number => v !== undefined);
      if (values.length) this.labels(name).set(Math.max(...values));
    }
  },
});

// ---- model calls -----------------------------------------------------------------------------

const llmCalls = new client.Counter({
  name: 'cortado_llm_calls_total', help: 'model calls (retries included in one call), by provider, model and outcome',
  labelNames: ['provider', 'model', 'outcome'] as const, registers: reg,
});
const llmTokens = new client.Counter({
  name: 'cortado_llm_tokens_total', help: 'tokens by provider, model and kind (input, output, cached input)',
  labelNames: ['provider', 'model', 'kind'] as const, registers: reg,
});
const llmCost = new client.Counter({
  name: 'cortado_llm_cost_usd_total', help: 'estimated cost in USD (models with a known price only)',
  labelNames: ['provider', 'model'] as const, registers: reg,
});
const llmErrors = new client.Counter({
  name: 'cortado_llm_errors_total', help: 'model calls that failed, by provider, model and error code',
  labelNames: ['provider', 'model', 'code'] as const, registers: reg,
});
const llmDuration = new client.Histogram({
  name: 'cortado_llm_call_duration_seconds', help: 'model call time (with its retries), by provider and model',
  labelNames: ['provider', 'model'] as const, buckets: SECONDS_MODEL, registers: reg,
});
const llmQueueDepth = new client.Gauge({
  name: 'cortado_llm_queue_depth', help: 'model calls waiting for a free slot of the provider\'s concurrency limit',
  labelNames: ['provider'] as const, registers: reg,
});

export interface ModelCallOutcome {
  provider: string;
  model: string;
  seconds: number;
  /** undefined: it answered */
  code?: string;
  usage?: { input_tokens: number; output_tokens: number; cached_input_tokens?: number; cost_usd?: number };
}

export function observeModelCall(o: ModelCallOutcome): void {
  if (!enabled) return;
  const provider = guards.engine.value(o.provider);
  const model = guards.model.value(o.model || 'unknown');
  llmCalls.labels(provider, model, o.code ? 'error' : 'ok').inc();
  llmDuration.labels(provider, model).observe(o.seconds);
  if (o.code) llmErrors.labels(provider, model, guards.code.value(o.code)).inc();
  if (o.usage) {
    llmTokens.labels(provider, model, 'input').inc(o.usage.input_tokens);
    llmTokens.labels(provider, model, 'output').inc(o.usage.output_tokens);
    if (o.usage.cached_input_tokens) llmTokens.labels(provider, model, 'cached').inc(o.usage.cached_input_tokens);
    if (o.usage.cost_usd) llmCost.labels(provider, model).inc(o.usage.cost_usd);
  }
}

/**
 * The model client's queue (actors/llm): `llmQueue.set(provider, n)` whenever the number of
 * calls waiting for a slot changes.
 */
export const llmQueue = {
  set(provider: string, waiting: number): void {
    if (enabled) llmQueueDepth.labels(guards.engine.value(provider)).set(waiting);
  },
};

// ---- the database, the guard, masking --------------------------------------------------------

const dbDuration = new client.Histogram({
  name: 'cortado_db_query_duration_seconds', help: 'time a query took on the database (the run, not the guard), by engine',
  labelNames: ['engine'] as const, buckets: SECONDS_FAST, registers: reg,
});
const dbRows = new client.Counter({
  name: 'cortado_db_rows_total', help: 'rows read from the database, by engine',
  labelNames: ['engine'] as const, registers: reg,
});
const dbErrors = new client.Counter({
  name: 'cortado_db_errors_total', help: 'queries the database failed, by engine and error code',
  labelNames: ['engine', 'code'] as const, registers: reg,
});
const guardRejections = new client.Counter({
  name: 'cortado_guard_rejections_total', help: 'SQL the guard refused (sql.execute), by reason',
  labelNames: ['reason'] as const, registers: reg,
});
const maskingHits = new client.Counter({
  name: 'cortado_masking_hits_total', help: 'result columns masked, by strategy',
  labelNames: ['strategy'] as const, registers: reg,
});

export function observeDb(engine: string, seconds: number, rows: number, code?: string): void {
  if (!enabled) return;
  const e = guards.engine.value(engine);
  dbDuration.labels(e).observe(seconds);
  if (rows > 0) dbRows.labels(e).inc(rows);
  if (code) dbErrors.labels(e, guards.code.value(code)).inc();
}

/** What became of a query Cortado cancelled on the database (actors/executor/engines/pg-cancel.ts, mysql.ts). */
export type DbCancelOutcome = 'stopped' | 'terminated' | 'still_running';

const dbCancels = new client.Counter({
  name: 'cortado_db_cancel_total',
  help: 'queries that ran past their timeout or that Cortado cancelled, by engine and what became of them: stopped (the database ended them), terminated (they ignored the cancel and their session was ended), still_running (they ignored both and keep a session busy)',
  labelNames: ['engine', 'outcome'] as const, registers: reg,
});

export function countDbCancel(engine: string, outcome: DbCancelOutcome): void {
  if (enabled) dbCancels.labels(guards.engine.value(engine), outcome).inc();
}

const dbWorkersWaiting = new client.Gauge({
  name: 'cortado_db_workers_waiting', help: 'database operations of signed-in scopes waiting for a free plugins.auth.max_workers slot',
  registers: reg,
});

/** The scopes' worker slots (actors/executor/scopes.ts): `dbWorkers.waiting(n)` whenever the number waiting changes. */
export const dbWorkers = {
  waiting(n: number): void {
    if (enabled) dbWorkersWaiting.set(n);
  },
};

export function countGuardRejection(reason: string): void {
  if (enabled) guardRejections.labels(guards.reason.value(reason || 'unknown')).inc();
}

export function countMaskingHit(strategy: string, n = 1): void {
  if (enabled && n > 0) maskingHits.labels(guards.strategy.value(strategy)).inc(n);
}

const parserRestarts = new client.Counter({
  name: 'cortado_sql_parser_restarts_total', help: 'SQL parser workers replaced (actors/lib/sql/parsers/pool.ts), by parser (guard, lineage) and reason (timeout, crash, memory, exit; inline: the guard parser on the event loop broke, and the event loop stops checking)',
  labelNames: ['parser', 'reason'] as const, registers: reg,
});

/** A parser worker was thrown away and replaced: its job ran too long, its parser broke, or it died. */
export function countParserRestart(parser: string, reason: string): void {
  if (enabled) parserRestarts.labels(guards.parser.value(parser), guards.reason.value(reason)).inc();
}

// ---- the catalog's linking --------------------------------------------------------------------

const tableLinking = new client.Counter({
  name: 'cortado_table_linking_total', help: 'questions whose tables the model was asked to pick (catalog.linking: model), by outcome: model (its picks were used) or fallback (the ranking\'s choice), and the reason',
  labelNames: ['outcome', 'reason'] as const, registers: reg,
});

/** One model-picking stage: `model` with reason `ok`, or `fallback` with why (unavailable, timeout, bad_reply, no_valid_name, error). */
export function countTableLinking(outcome: 'model' | 'fallback', reason: string): void {
  if (enabled) tableLinking.labels(outcome, guards.reason.value(reason)).inc();
}

// ---- the edge's rate limit -------------------------------------------------------------------

const rateLimited = new client.Counter({
  name: 'cortado_rate_limit_refusals_total', help: 'requests refused by the rate limit (429), by the rule\'s path pattern',
  labelNames: ['rule'] as const, registers: reg,
});

export function countRateLimited(rule: string): void {
  if (enabled) rateLimited.labels(guards.rule.value(rule)).inc();
}

// ---- scheduler and mail ----------------------------------------------------------------------

const schedulerRuns = new client.Counter({
  name: 'cortado_scheduler_runs_total', help: 'scheduled runs finished, by outcome (success, failure) and trigger (cron, manual, recovery)',
  labelNames: ['outcome', 'trigger'] as const, registers: reg,
});
const schedulerLateness = new client.Histogram({
  name: 'cortado_scheduler_lateness_seconds', help: 'how long after its planned time a scheduled run started (cron and recovery runs)',
  buckets: SECONDS_LATE, registers: reg,
});
const mail = new client.Counter({
  name: 'cortado_mail_total', help: 'e-mails by outcome: sent, failed (refused or failed: mail.failed), logged (email.enabled is false), unknown (a mailer died mid-send; not sent again); a repeat of an idempotency key is not counted again',
  labelNames: ['outcome'] as const, registers: reg,
});

export function observeScheduledRun(success: boolean, trigger: string, latenessSeconds?: number): void {
  if (!enabled) return;
  schedulerRuns.labels(success ? 'success' : 'failure', guards.reason.value(trigger)).inc();
  if (latenessSeconds !== undefined) schedulerLateness.observe(Math.max(0, latenessSeconds));
}

export function countMail(outcome: 'sent' | 'failed' | 'logged' | 'unknown'): void {
  if (enabled) mail.labels(outcome).inc();
}

