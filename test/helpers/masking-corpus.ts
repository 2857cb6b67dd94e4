/**
 * Runs the masking attack corpus (test/fixtures/attacks-masking.ts) through a running
 * executor and masking actor over the bus, the way the assistant does: SqlExecute, then
 * ResultMask with the executed SQL, the dialect, the columns and the rows.
 *
 * For each attack: the guard or the server refused it (allowed only where the corpus says so), or it ran and
 * its raw rows hold a secret (the attack really reaches one: a case that cannot leak proves
 * nothing) while the masked rows and the masked column names hold none.
 */
import type { Bus } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { ResultMask, SqlExecute } from '../../protocol/subjects.js';
import { MASKING_RULES, MaskingClass, secretsIn, type MaskingAttack } from '../fixtures/attacks-masking.js';

interface Asserts {
  ok(v: unknown, message: string): boolean;
  same(found: unknown, wanted: unknown, message: string): boolean;
  equal(found: unknown, wanted: unknown, message: string): boolean;
  fail(message: string): boolean;
  comment(...args: unknown[]): void;
}

let n = 0;

export async function runMaskingCorpus(t: Asserts, client: Bus, dialect: Dialect, attacks: readonly MaskingAttack[], label: string): Promise<void> {
  const byClass = new Map<string, number>();
  for (const a of attacks) byClass.set(a.class, (byClass.get(a.class) ?? 0) + 1);
  t.same([...byClass.keys()].sort(), Object.values(MaskingClass).sort(), `${label}: every class has attacks (${[...byClass].map(([c, k]) => `${c} ${k}`).join(', ')})`);
  let ran = 0;
  let refused = 0;
  for (const a of attacks) {
    const ctx = { requestId: `masking-corpus-${++n}` };
    let result;
    try {
      result = await client.request(SqlExecute, { sql: a.sql }, ctx);
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
    const masked = await client.request(ResultMask, { sql: result.sql, dialect, columns: result.columns, rows: result.rows, rules: MASKING_RULES }, ctx);
    const leaked = secretsIn({ rows: masked.rows, columns: result.columns.map((c) => c.name) });
    t.same(leaked, [], `${label} ${a.class} / ${a.name}: no secret in the masked rows${leaked.length ? ` (${JSON.stringify(masked.rows).slice(0, 300)})` : ''}`);
  }
  t.comment(`${label}: ${ran} ran and were masked, ${refused} refused`);
}
