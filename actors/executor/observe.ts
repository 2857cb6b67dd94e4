/**
 * A query on the database as operators see it: a span under sql.execute (runtime/tracing.ts:
 * the engine and the rows read — never the SQL, which may hold values, nor the database's error
 * text before it is sanitised) and the database metrics (runtime/metrics.ts: time, rows and
 * errors by engine). Only the run is timed: the guard and the wait for a worker slot are not.
 */
import type { Ctx } from '../../protocol/headers.js';
import { toCortadoError } from '../../protocol/errors.js';
import { countGuardRejection, observeDb } from '../../runtime/metrics.js';
import { startSpan, traceOf, SpanAttr } from '../../runtime/tracing.js';

export async function observedQuery<T extends { rows: readonly unknown[] }>(engine: string, ctx: Ctx, run: () => Promise<T>): Promise<T> {
  const span = startSpan(`db ${engine}`, traceOf(ctx), 'client', { [SpanAttr.RequestId]: ctx.requestId, 'db.system.name': engine });
  const started = performance.now();
  try {
    const result = await run();
    observeDb(engine, (performance.now() - started) / 1000, result.rows.length);
    span?.set({ 'db.response.returned_rows': result.rows.length });
    span?.end();
    return result;
  } catch (err) {
    const code = toCortadoError(err).code;
    observeDb(engine, (performance.now() - started) / 1000, 0, code);
    span?.end({ code });
    throw err;
  }
}

/** The guard refused the SQL of sql.execute: counted by its reason (`details.kind`). */
export function countRejection(details: Record<string, unknown> | undefined): void {
  countGuardRejection(typeof details?.kind === 'string' ? details.kind : 'unknown');
}
