/**
 * Runs the masking attack corpus (test/fixtures/attacks-masking.ts) through two running
 * executors on one broker (startCorpusExecutors): one whose rule store holds MASKING_RULES
 * (sql.execute masks before it replies, as every caller gets it), and one under a bus prefix of
 * its own whose store holds no rule, the only way to see the raw rows.
 *
 * For each attack: the guard or the server refused it (allowed only where the corpus says so), or
 * it ran and its raw rows hold a secret (the attack really reaches one: a case that cannot leak
 * proves nothing) while the rows sql.execute answers with the rules active, and the masking
 * actor's result.mask of the raw rows, hold none (nor do the column names).
 */
import type { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { MaskRuleCreate, ResultMask, SqlExecute } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { runCortado } from '../../cli/run.js';
import { MASKING_RULES, MaskingClass, secretsIn, type MaskingAttack } from '../fixtures/attacks-masking.js';

export interface CorpusExecutors {
  /** an executor whose store holds no mask rule: raw rows */
  raw: Bus;
  /** an executor (and masking actor) whose store holds MASKING_RULES */
  masked: Bus;
  stop(graceMs?: number): Promise<void>;
}

/** The two executors of runMaskingCorpus, with settings (the rule store) beside each. */
export async function startCorpusExecutors(config: Config, log: Logger, name: string): Promise<CorpusExecutors> {
  const rawConfig = { ...config, bus: { ...config.bus, prefix: `${config.bus.prefix}raw` } };
  const raw = await runCortado({ config: rawConfig, roles: { edge: false, actors: ['executor', 'settings'] }, log, name: `${name}-raw` });
  let masked;
  try {
    masked = await runCortado({ config, roles: { edge: false, actors: ['executor', 'settings', 'masking'] }, log, name });
    for (const rule of MASKING_RULES) await masked.bus.request(MaskRuleCreate, rule, { requestId: `${name}-rule` });
  } catch (err) {
    await masked?.stop(1_000);
    await raw.stop(1_000);
    throw err;
  }
  const m = masked;
  return { raw: raw.bus, masked: m.bus, stop: async (graceMs) => { await m.stop(graceMs); await raw.stop(graceMs); } };
}

interface Asserts {
  ok(v: unknown, message: string): boolean;
  same(found: unknown, wanted: unknown, message: string): boolean;
  equal(found: unknown, wanted: unknown, message: string): boolean;
  fail(message: string): boolean;
  comment(...args: unknown[]): void;
}

let n = 0;

export async function runMaskingCorpus(t: Asserts, executors: Pick<CorpusExecutors, 'raw' | 'masked'>, dialect: Dialect, attacks: readonly MaskingAttack[], label: string): Promise<void> {
  const byClass = new Map<string, number>();
  for (const a of attacks) byClass.set(a.class, (byClass.get(a.class) ?? 0) + 1);
  t.same([...byClass.keys()].sort(), Object.values(MaskingClass).sort(), `${label}: every class has attacks (${[...byClass].map(([c, k]) => `${c} ${k}`).join(', ')})`);
  let ran = 0;
  let refused = 0;
  for (const a of attacks) {
    const ctx = { requestId: `masking-corpus-${++n}` };
    let result;
    try {
      result = await executors.raw.request(SqlExecute, { sql: a.sql }, ctx);
    } catch (err) {
      const e = err instanceof CortadoError ? err : undefined;
      if (a.expect === 'refused_or_masked' && (e?.code === 'SQL_REJECTED' || e?.code === 'DB_QUERY_FAILED')) {
        refused++;
        t.ok(true, `${label} ${a.class} / ${a.name}: refused by ${e.code === 'SQL_REJECTED' ? 'the guard' : 'the server'} (${e.message})`);
        continue;
      }
      t.fail(`${label} ${a.class} / ${a.name}: did not run (${e ? `${e.code}: ${e.message}` : String(err)})`);
      continue;
    }
    ran++;
    t.ok(secretsIn(result.rows).length > 0, `${label} ${a.class} / ${a.name}: the raw rows hold a secret (the attack reaches one)`);
    t.same(result.masked, [], `${label} ${a.class} / ${a.name}: no rule in the raw executor's store`);
    const executed = await executors.masked.request(SqlExecute, { sql: a.sql }, ctx);
    const leaked = secretsIn({ rows: executed.rows, columns: executed.columns.map((c) => c.name) });
    t.same(leaked, [], `${label} ${a.class} / ${a.name}: no secret in the rows sql.execute answers${leaked.length ? ` (${JSON.stringify(executed.rows).slice(0, 300)})` : ''}`);
    const masked = await executors.masked.request(ResultMask, { sql: result.sql, dialect, columns: result.columns, rows: result.rows, rules: MASKING_RULES }, ctx);
    const leakedActor = secretsIn({ rows: masked.rows, columns: result.columns.map((c) => c.name) });
    t.same(leakedActor, [], `${label} ${a.class} / ${a.name}: no secret in result.mask's rows${leakedActor.length ? ` (${JSON.stringify(masked.rows).slice(0, 300)})` : ''}`);
  }
  t.comment(`${label}: ${ran} ran and were masked, ${refused} refused`);
}
