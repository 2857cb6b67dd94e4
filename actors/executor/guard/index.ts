/**
 * The SQL guard, by dialect. Adding a dialect: write `<dialect>.ts` exporting a DialectGuard
 * and `allow-<dialect>.ts` with what its queries may call and read (everything else is refused),
 * give its well-known dangerous functions a reason in deny.ts, and add one line to GUARDS below.
 */
import type { Dialect } from '../../../protocol/schemas/common.js';
import { postgresGuard } from './postgresql.js';
import { trinoGuard } from './trino.js';
import { mysqlGuard } from './mysql.js';
import { bigqueryGuard } from './bigquery.js';
import { rejected, type DialectGuard, type GuardLimits, type GuardResult } from './types.js';

const GUARDS: Partial<Record<Dialect, DialectGuard>> = {
  postgresql: postgresGuard,
  trino: trinoGuard,
  mysql: mysqlGuard,
  bigquery: bigqueryGuard,
};

export function hasGuard(dialect: Dialect): boolean {
  return GUARDS[dialect] !== undefined;
}

/** Load what the dialect's guard needs (once). Call before the first guardSql of that dialect. */
export async function prepareGuard(dialect: Dialect): Promise<void> {
  await GUARDS[dialect]?.prepare();
}

/**
 * Check one statement for the dialect and bound its rows. Throws CortadoError SQL_REJECTED
 * with `details.kind` (see RejectKind) and a reason a person can read.
 */
export function guardSql(sql: string, dialect: Dialect, limits: GuardLimits): GuardResult {
  const guard = GUARDS[dialect];
  if (!guard) throw rejected('unsupported_dialect', `there is no SQL guard for ${dialect} yet, so nothing runs`, { dialect });
  return guard.guard(sql, limits);
}

export { RejectKind } from './types.js';
export type { GuardLimits, GuardResult } from './types.js';
