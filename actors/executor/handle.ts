/**
 * The executor's logic, as plain functions: guard the SQL for the engine's dialect, run it
 * read-only with the timeout, mask the rows, and answer with them. Refusals (by the guard or by
 * the database) become a `query.rejected` event as well as the error, so the audit trail sees
 * them without row values.
 *
 * Masking is part of execution: `execute` masks every result before it replies (the mask rules
 * through each column's lineage, lib/masking/), so no caller can get rows that skipped it. For
 * PostgreSQL the lineage is read from the guard's own parse (guard/job.ts); other dialects'
 * lineage is parsed in the masking library's worker.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError, type ErrorCode } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type {
  SqlCheckReply,
  SqlCheckRequest,
  SqlEstimateReply,
  SqlExecuteReply,
  SqlExecuteRequest,
  SqlIntrospectReply,
  SqlPingReply,
} from '../../protocol/schemas/sql.js';
import type { SqlConnectTestReply, SqlConnectTestRequest } from '../../protocol/schemas/scope.js';
import { QueryRejectedEvt, SqlExecute } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { DbEngine } from './engines/engine.js';
import { configuredTimeoutMs } from './engines/index.js';
import { capsFromConfig } from './engines/wire-cap.js';
import type { GuardLimits } from './guard/index.js';
import { guardIsolated, type IsolatedGuard } from './guard/isolated.js';
import { withDateRange } from './date-range.js';
import { sanitizeDbError } from './sanitize.js';
import { baseLease, type Lease, type ScopeRegistry } from './scopes.js';
import { countRejection, observedQuery } from './observe.js';
import { pace, requestKey } from '../../runtime/pacer.js';
import type { MaskingDeps } from '../lib/masking/mask.js';
import { maskCounted } from '../lib/masking/service.js';
import type { Query } from '../lib/masking/lineage.js';
import type { MaskRuleLite } from '../../protocol/schemas/policy.js';
import type { Dialect } from '../../protocol/schemas/common.js';

export interface ExecutorDeps {
  config: Config;
  engine: DbEngine;
  bus: Pick<Bus, 'publish'>;
  log: Logger;
  /** resolves once the role is known not to write (database.require_read_only); throws otherwise */
  ensureReadOnly?: () => Promise<void>;
  /** per-scope engines (plugins.auth); without it a request with a scope is refused */
  scopes?: ScopeRegistry;
  /** the mask rules and how to apply them: every result is masked before it leaves (lib/masking/) */
  masking: MaskingDeps;
}

/** The engine (and catalog lock) of this request: its scope's, else the server's own. */
export async function leaseFor(deps: ExecutorDeps, ctx: Ctx): Promise<Lease> {
  if (deps.scopes) return deps.scopes.lease(ctx);
  if (ctx.scope) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: this executor has no per-scope connections');
  return baseLease(deps.config, deps.engine);
}

/** The dialect's guard, then the catalog lock where it applies, in a worker (guard/isolated.ts); with `lineage`, the lineage model where the dialect's guard parse gives it. */
function guardFor(sql: string, lease: Lease, limits: GuardLimits, aggregate = false, lineage = false): Promise<IsolatedGuard> {
  return guardIsolated(sql, lease.engine.dialect, limits, { ...(lease.lock ? { lock: lease.lock } : {}), aggregate, ...(lineage ? { lineage: true } : {}) });
}

/**
 * The active mask rules, asked for as the request starts (kept by the rule cache, so usually at
 * once). A failure is the caller's when it awaits: none is left unhandled meanwhile.
 */
export function rulesFor(deps: Pick<ExecutorDeps, 'masking'>, ctx: Ctx): Promise<MaskRuleLite[]> {
  const p = deps.masking.rules.get(ctx);
  p.catch(() => undefined);
  return p;
}

/** Run `work` within a max_workers slot when the engine is a scope's own; the queue's wait is taken off the timeout. */
export async function inSlot<T>(deps: ExecutorDeps, lease: Lease, timeoutMs: number, work: (timeoutMs: number) => Promise<T>): Promise<T> {
  if (!lease.scoped || !deps.scopes) return work(timeoutMs);
  const slot = await deps.scopes.workers.acquire(timeoutMs);
  try {
    return await work(Math.max(1, timeoutMs - slot.waitedMs));
  } finally {
    slot.release();
  }
}

/** Failures that are about this SQL (not about the service): reported as query.rejected. */
const REJECTIONS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['SQL_REJECTED', 'DB_QUERY_FAILED', 'DB_TIMEOUT', 'RESULT_TOO_LARGE']);

/** A ping answers before the health check (2 s) gives up on it. */
const PING_TIMEOUT_MS = 1_500;
/** How long a login's connection test may take to connect and answer. */
const CONNECT_TEST_TIMEOUT_MS = 10_000;

export async function execute(input: SqlExecuteRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlExecuteReply> {
  const started = performance.now();
  const { log } = deps;
  let lease: Lease | undefined;
  let ran: string | undefined;
  try {
    const rulesAsked = rulesFor(deps, ctx);
    lease = await leaseFor(deps, ctx);
    const { engine } = lease;
    // with rules active, the guard also reads the lineage from its own parse where it can
    const rules = await rulesAsked;
    const sql = input.date_range ? withDateRange(input.sql, engine.dialect, input.date_range) : input.sql;
    const { guarded, lineage } = await guardFor(sql, lease, limitsFor(input, deps.config, await lease.engine.serverMajorVersion?.()), false, rules.length > 0);
    ran = guarded.runSql;
    if (!lease.scoped) await deps.ensureReadOnly?.();
    // timed and traced (observe.ts): the run only, not the guard nor the wait for a slot
    const result = await inSlot(deps, lease, queryTimeoutMs(input.timeout_ms, deps.config, ctx), (timeoutMs) => observedQuery(engine.provider, ctx, () => engine.execute(guarded.runSql, {
      timeoutMs,
      maxRows: guarded.limit + 1,
      // query.max_result_mb / max_value_kb, read at each question (an admin may change them)
      ...capsFromConfig(deps.config.query),
      ...(ctx.user ? { user: ctx.user } : {}),
    })));
    // hundreds of results can arrive in one poll: what follows waits its turn (runtime/pacer.ts)
    const turn = pace(requestKey(ctx.requestId));
    if (turn) await turn;
    const masked = await maskRows(guarded.sql, engine.dialect, result.columns, result.rows.slice(0, guarded.limit), rules, lineage, deps, ctx);
    const rows = masked.rows;
    const reply: SqlExecuteReply = {
      sql: guarded.sql,
      columns: result.columns,
      rows,
      row_count: rows.length,
      masked: masked.masked,
      mask_ms: masked.ms,
      truncated: guarded.capped && result.rows.length > guarded.limit,
      // LIMIT 0 is the user's own bound; the contract's cap is at least 1
      limit: Math.max(1, guarded.limit),
      ...(guarded.tables.length ? { tables: guarded.tables } : {}),
      duration_ms: round(performance.now() - started),
      ...result.stats,
    };
    // per question: at debug (the edge's access line is the one line a request gets at info)
    if (log.isLevelEnabled('debug')) log.debug({ rid: ctx.requestId, subj: SqlExecute.subject, code: 'OK', ms: reply.duration_ms, rows: reply.row_count, truncated: reply.truncated }, 'query ran');
    return reply;
  } catch (err) {
    // the database's words may carry values of the rows: sanitised before any channel (reply,
    // event, log, the model's self-correction) gets them (sanitize.ts)
    const e = sanitizeDbError(toCortadoError(err), (lease?.engine ?? deps.engine).dialect, [input.sql, ran]);
    const line = { rid: ctx.requestId, subj: SqlExecute.subject, code: e.code, ms: round(performance.now() - started), rows: 0, ...safeDetails(e) };
    if (e.code === 'SQL_REJECTED') countRejection(e.details);
    if (e.httpStatus >= 500 && e.code !== 'DB_TIMEOUT') log.warn(line, 'query failed');
    else log.info(line, 'query refused');
    if (REJECTIONS.has(e.code)) {
      deps.bus.publish(QueryRejectedEvt, {
        id: randomUUID(),
        ts: new Date().toISOString(),
        request_id: ctx.requestId,
        ...(ctx.user ? { user: ctx.user } : {}),
        sql: input.sql,
        code: e.code,
        reason: e.message,
        ...(typeof e.details?.kind === 'string' ? { kind: e.details.kind } : {}),
      }, ctx);
    }
    throw e;
  } finally {
    lease?.release();
  }
}

/** The guard alone: would this SQL run, and as what. */
export async function check(input: SqlCheckRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlCheckReply> {
  const lease = await leaseFor(deps, ctx);
  try {
    const { guarded, verdict } = await guardFor(input.sql, lease, limitsFor({}, deps.config, await lease.engine.serverMajorVersion?.()), input.expect === 'aggregate');
    if (!verdict) return { ok: true, sql: guarded.sql, ...(guarded.tables.length ? { tables: guarded.tables } : {}) };
    return { ok: true, sql: guarded.sql, aggregate: verdict.aggregate, ...(verdict.reason ? { aggregate_reason: verdict.reason } : {}) };
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'SQL_REJECTED') return { ok: false, reason: err.message };
    throw err;
  } finally {
    lease.release();
  }
}

/** The guard, then the engine's dry-run estimate where it has one. Nothing runs. */
export async function estimate(input: SqlCheckRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlEstimateReply> {
  const lease = await leaseFor(deps, ctx);
  try {
    const { engine } = lease;
    const { guarded } = await guardFor(input.sql, lease, limitsFor({}, deps.config, await lease.engine.serverMajorVersion?.()));
    const stats = engine.estimate ? await inSlot(deps, lease, queryTimeoutMs(undefined, deps.config, ctx), () => engine.estimate!(guarded.sql)) : {};
    return { sql: guarded.sql, ...stats };
  } finally {
    lease.release();
  }
}

/** The tables the request's connection can read (a scope's: only what plugins.auth allows it to see). */
export async function introspect(_input: unknown, deps: ExecutorDeps, ctx: Ctx): Promise<SqlIntrospectReply> {
  const lease = await leaseFor(deps, ctx);
  try {
    const { engine, visible } = lease;
    const schema = await inSlot(deps, lease, queryTimeoutMs(undefined, deps.config, ctx), () => engine.introspect());
    const tables = visible ? schema.tables.filter(visible) : schema.tables;
    return { dialect: engine.dialect, provider: engine.provider, ...schema, tables };
  } finally {
    lease.release();
  }
}

/**
 * A login's connection test (sql.connect.test): connect with the given db_config (secrets may be
 * sealed) and run a trivial query; the database refusing the login is UNAUTHORIZED, anything
 * else that fails DB_UNAVAILABLE. The connection is closed again at once.
 */
export async function connectTest(input: SqlConnectTestRequest, deps: ExecutorDeps, ctx: Ctx): Promise<SqlConnectTestReply> {
  if (!deps.scopes) throw new CortadoError('DB_UNAVAILABLE', 'the database cannot be reached: this executor has no per-scope connections');
  const started = performance.now();
  const slot = await deps.scopes.workers.acquire(queryTimeoutMs(undefined, deps.config, ctx));
  try {
    const { engine, provider } = await deps.scopes.probe(input.db_config);
    try {
      await engine.ping(CONNECT_TEST_TIMEOUT_MS);
    } finally {
      await engine.close().catch(() => undefined);
    }
    return { ok: true, provider, latency_ms: round(performance.now() - started) };
  } catch (err) {
    const e = toCortadoError(err);
    if (e.code === 'DB_UNAVAILABLE' && (/login was refused/i.test(e.message) || e.details?.http_status === 401)) {
      throw new CortadoError('UNAUTHORIZED', 'the database refused these credentials');
    }
    if (e.code === 'DB_UNAVAILABLE' || e.code === 'DB_TIMEOUT') throw new CortadoError('DB_UNAVAILABLE', e.message);
    if (e.code === 'DB_QUERY_FAILED') throw new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${e.message}`);
    throw e;
  } finally {
    slot.release();
  }
}

/** Never throws: a database that does not answer is `ok: false` with the reason. */
export async function ping(_input: unknown, deps: ExecutorDeps, ctx: Ctx): Promise<SqlPingReply> {
  const started = performance.now();
  let base = { provider: deps.engine.provider as string, dialect: deps.engine.dialect };
  let lease: Lease | undefined;
  try {
    lease = await leaseFor(deps, ctx);
    const { engine } = lease;
    base = { provider: engine.provider, dialect: engine.dialect };
    await inSlot(deps, lease, PING_TIMEOUT_MS, (ms) => engine.ping(ms));
    return { ...base, ok: true, latency_ms: round(performance.now() - started) };
  } catch (err) {
    const e = toCortadoError(err);
    return { ...base, ok: false, latency_ms: round(performance.now() - started), error: e.message };
  } finally {
    lease?.release();
  }
}

// ---- helpers ------------------------------------------------------------------------------

/** Rows of `sql` masked with `rules` (lineage: the guard's model when it read one), and how long that took. */
export async function maskRows(
  sql: string, dialect: Dialect, columns: SqlExecuteReply['columns'], rows: SqlExecuteReply['rows'],
  rules: MaskRuleLite[], lineage: Query | undefined, deps: Pick<ExecutorDeps, 'masking'>, ctx: Ctx,
): Promise<{ rows: SqlExecuteReply['rows']; masked: SqlExecuteReply['masked']; ms: number }> {
  const t0 = performance.now();
  const r = await maskCounted({ sql, dialect, columns, rows, rules }, deps.masking, ctx, lineage);
  return { rows: r.rows, masked: r.masked, ms: round(performance.now() - t0) };
}

/** The guard's limits; `serverVersion` is the engine's (engine.serverMajorVersion), judged as the oldest when unknown. */
function limitsFor(input: Pick<SqlExecuteRequest, 'default_limit' | 'max_limit'>, config: Config, serverVersion: number | undefined): GuardLimits {
  return {
    defaultLimit: input.default_limit ?? config.query.default_limit,
    maxLimit: input.max_limit ?? config.query.max_limit,
    allowedFunctions: config.database.allowed_functions,
    serverVersion,
  };
}

/**
 * The configured timeout (the provider's, else query.timeout) is also the ceiling: a caller
 * may ask for less, not more. Nor does a query outlive the caller's deadline.
 */
export function queryTimeoutMs(requested: number | undefined, config: Config, ctx: Pick<Ctx, 'deadline'>, now = Date.now()): number {
  const configured = configuredTimeoutMs(config);
  let ms = Math.min(requested ?? configured, configured);
  if (ctx.deadline !== undefined) ms = Math.min(ms, Math.max(1, ctx.deadline - now));
  return ms;
}

/** Details worth a log line: why, never values. */
function safeDetails(e: CortadoError): Record<string, unknown> {
  const d = e.details ?? {};
  const out: Record<string, unknown> = {};
  for (const key of ['kind', 'sqlstate', 'reason', 'statement', 'function'] as const) {
    if (d[key] !== undefined) out[key] = d[key];
  }
  return out;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
