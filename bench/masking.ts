/**
 * The masking section of `npm run bench`: what masking costs per question, in process (no bus).
 *
 *   lineage  the accepted analytical queries of the four guard corpora (test/fixtures/guard-cases*),
 *            each planned with three rules active: parse, resolve, match (planMasks), µs per
 *            question (mean, p50, p99) per dialect
 *   rows     mask() on 1,000 rows × 8 columns (two masked), on 1,000 rows with a JSON document
 *            column (every document walked, three keys masked in each), and on 1,000 documents
 *            without a key any rule matches (not parsed)
 *
 * Prints a table; never fails on a time.
 *   node --import tsx bench/masking.ts
 *   BENCH_ONLY=masking npm run bench
 *   BENCH_MASKING_BASELINE=/path/to/another/checkout node --import tsx bench/masking.ts   (both, side by side)
 */
import path from 'node:path';
import type { Column, Dialect } from '../protocol/schemas/common.js';
import type { MaskRuleLite } from '../protocol/schemas/policy.js';
import { ACCEPTED_POSTGRESQL } from '../test/fixtures/guard-cases.js';
import { ACCEPTED_MYSQL } from '../test/fixtures/guard-cases-mysql.js';
import { ACCEPTED_BIGQUERY } from '../test/fixtures/guard-cases-bigquery.js';
import { ACCEPTED_TRINO } from '../test/fixtures/guard-cases-trino.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RULES: MaskRuleLite[] = [
  { field_pattern: 'customers.email', strategy: 'partial' },
  { field_pattern: 'ssn', strategy: 'hash' },
  { field_pattern: '*phone*', strategy: 'redact' },
];
const ROUNDS = Number(process.env.BENCH_MASKING_ROUNDS ?? 20);

interface Impl {
  label: string;
  planMasks: (sql: string, dialect: Dialect, columns: readonly Column[], rules: readonly MaskRuleLite[]) => unknown[];
  mask: (input: { sql: string; dialect: Dialect; columns: Column[]; rows: unknown[][] }, deps: unknown, ctx: { requestId: string }) => Promise<{ rows: unknown[][] }>;
  deps: unknown;
}

async function load(root: string, label: string): Promise<Impl> {
  const dialects = await import(path.join(root, 'actors/lib/masking/dialects.ts'));
  await dialects.prepareParsers();
  const handle = await import(path.join(root, 'actors/lib/masking/mask.ts'));
  const { createHasher } = await import(path.join(root, 'actors/lib/masking/strategies.ts'));
  const { createLogger } = await import(path.join(ROOT, 'runtime/log.ts'));
  const deps = { rules: { get: async () => RULES }, hasher: createHasher('bench'), log: createLogger({ svc: 'bench', level: 'silent' }) };
  return { label, planMasks: handle.planMasks, mask: handle.mask, deps };
}

/** The output names of a statement whose select list is explicit (a star needs the server's names). */
function namesOf(sql: string): string[] | undefined {
  const m = /^\s*select\s+(?:distinct\s+)?(.*?)\s+from\s/is.exec(sql);
  if (!m || m[1]!.includes('*')) return undefined;
  // aliases when written, else the last word: good enough for a timing
  const items: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of m[1]!) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      items.push(cur);
      cur = '';
    } else cur += ch;
  }
  items.push(cur);
  return items.map((i) => /\bas\s+"?([\w]+)"?\s*$/i.exec(i.trim())?.[1] ?? i.trim().split(/[\s.]/).at(-1)!.replace(/\W/g, '') ?? 'c');
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

function lineage(impl: Impl, dialect: Dialect, sqls: readonly string[]): { n: number; mean: number; p50: number; p99: number } {
  const cases = sqls.flatMap((sql) => {
    const names = namesOf(sql);
    return names ? [{ sql, columns: names.map((name) => ({ name, type: 'text' })) }] : [];
  });
  for (const c of cases) impl.planMasks(c.sql, dialect, c.columns, RULES); // warm
  const times: number[] = [];
  for (const c of cases) {
    const t0 = performance.now();
    for (let r = 0; r < ROUNDS; r++) impl.planMasks(c.sql, dialect, c.columns, RULES);
    times.push(((performance.now() - t0) / ROUNDS) * 1000);
  }
  return { n: cases.length, mean: times.reduce((a, b) => a + b, 0) / times.length, p50: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

async function rows(impl: Impl): Promise<{ plain: number; documents: number; harmless: number }> {
  const plainCols: Column[] = ['id', 'name', 'email', 'ssn', 'country', 'city', 'amount', 'created_at'].map((name) => ({ name, type: 'text' }));
  const plain = Array.from({ length: 1_000 }, (_, i) => [i, `Name ${i}`, `user${i}@example.com`, `${100 + (i % 900)}-45-${1000 + i}`, 'UK', 'London', i * 1.5, '2025-01-01']);
  const docCols: Column[] = [{ name: 'id', type: 'int4' }, { name: 'payload', type: 'jsonb' }];
  const docs = Array.from({ length: 1_000 }, (_, i) => [i, JSON.stringify({ contact: { email: `user${i}@example.com`, phone: `+44 20 7946 ${1000 + i}` }, city: 'London', ids: { ssn: `123-45-${1000 + i}` }, tags: ['a', 'b'], n: i })]);
  const harmless = Array.from({ length: 1_000 }, (_, i) => [i, JSON.stringify({ city: 'London', items: [{ sku: `A-${i}`, qty: i % 7 }], total: i * 1.5, note: 'ok' })]);
  const time = async (sql: string, columns: Column[], data: unknown[][]): Promise<number> => {
    await impl.mask({ sql, dialect: 'postgresql', columns, rows: data }, impl.deps, { requestId: 'warm' });
    const t0 = performance.now();
    for (let r = 0; r < ROUNDS; r++) await impl.mask({ sql, dialect: 'postgresql', columns, rows: data }, impl.deps, { requestId: 'b' });
    return (performance.now() - t0) / ROUNDS;
  };
  return {
    plain: await time('SELECT id, name, email, ssn, country, city, amount, created_at FROM customers', plainCols, plain),
    documents: await time('SELECT id, payload FROM customers', docCols, docs),
    harmless: await time('SELECT id, payload FROM customers', docCols, harmless),
  };
}

export async function maskingSection(): Promise<void> {
  const impls = [await load(ROOT, 'this checkout')];
  if (process.env.BENCH_MASKING_BASELINE) impls.unshift(await load(path.resolve(process.env.BENCH_MASKING_BASELINE), 'baseline'));
  const corpora: Array<[Dialect, readonly string[]]> = [
    ['postgresql', ACCEPTED_POSTGRESQL.map((c) => c.sql)],
    ['mysql', ACCEPTED_MYSQL.map((c) => c.sql)],
    ['bigquery', ACCEPTED_BIGQUERY.map((c) => c.sql)],
    ['trino', ACCEPTED_TRINO.map((c) => c.sql)],
  ];
  console.log('\n## masking (in process, three rules active)\n');
  console.log('| code | what | n | mean | p50 | p99 |');
  console.log('|---|---|---|---|---|---|');
  for (const impl of impls) {
    for (const [dialect, sqls] of corpora) {
      const r = lineage(impl, dialect, sqls);
      console.log(`| ${impl.label} | lineage, ${dialect} (µs per question) | ${r.n} | ${r.mean.toFixed(0)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} |`);
    }
    const r = await rows(impl);
    console.log(`| ${impl.label} | mask() 1,000 rows × 8 columns, 2 masked (ms) | 1 | ${r.plain.toFixed(2)} | | |`);
    console.log(`| ${impl.label} | mask() 1,000 rows with a JSON document each, 3 keys masked in each (ms) | 1 | ${r.documents.toFixed(2)} | | |`);
    console.log(`| ${impl.label} | mask() 1,000 rows with a JSON document each, no key a rule matches (ms) | 1 | ${r.harmless.toFixed(2)} | | |`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await maskingSection();
