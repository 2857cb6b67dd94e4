/**
 * The real-schema part of `npm run bench:linking`: each size through run.ts, a table for dev,
 * held-out test and all, the largest size once more without declared foreign keys, the most
 * missed answer tables, recall per question class, and issue 23's goals judged as met or not.
 */
import { writeFileSync } from 'node:fs';
import { ADMIN_URL } from '../../../test/helpers/pg.js';
import { TOKENIZER } from '../evaluate.js';
import { QUESTION_CLASSES, QUESTIONS } from './questions.js';
import { runRealLinking, summarize, type RealRun, type RealSummary } from './run.js';
import { SOURCES } from './sources.js';

/** BENCH_LINKING_REAL_SIZES: "0,2000,10000"; 0 or "bare" is the sources alone. */
export function realSizes(text = process.env.BENCH_LINKING_REAL_SIZES ?? '0,2000,10000'): number[] {
  const sizes = text.split(',').map((s) => s.trim()).filter(Boolean).map((s) => (s === 'bare' ? 0 : Number(s)));
  const bad = sizes.filter((n) => !Number.isInteger(n) || n < 0);
  if (bad.length || !sizes.length) throw new Error(`BENCH_LINKING_REAL_SIZES lists relation counts (0 or "bare" for the sources alone): "${text}"`);
  return sizes;
}

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : '–');
const n0 = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');

const HEADER = [
  '| relations | FKs | split | questions |  recall | complete | wrong clarif. /100 | ambiguous asked | tokens mean/p95 | sent | ms/q mean/p95 |',
  '| --------: | --: | :---- | --------: | ------: | -------: | -----------------: | --------------: | --------------: | ---: | ------------: |',
];

function row(run: RealRun, split: string, s: RealSummary): string {
  return `| ${n0(run.relations).padStart(9)} | ${(run.foreign_keys ? 'yes' : 'no').padStart(3)} | ${split.padEnd(5)} | ${String(s.questions).padStart(9)} | ${pct(s.recall).padStart(7)} | ${pct(s.complete).padStart(8)} | ${`${s.wrong_clarifications_per_100.toFixed(1)} (${s.wrong_clarifications})`.padStart(18)} | ${`${s.ambiguous_clarified} of ${s.ambiguous}`.padStart(15)} | ${`${n0(s.tokens_mean)} / ${n0(s.tokens_p95)}`.padStart(15)} | ${s.tables_sent_mean.toFixed(1).padStart(4)} | ${`${s.ms_mean.toFixed(0)} / ${s.ms_p95.toFixed(0)}`.padStart(13)} |`;
}

function misses(run: RealRun): void {
  const missed = new Map<string, number>();
  for (const r of run.results) if (r.clear) for (const m of r.missing) missed.set(m, (missed.get(m) ?? 0) + 1);
  const top = [...missed].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 12);
  if (top.length) console.log(`most missed answer tables at ${n0(run.relations)}${run.foreign_keys ? '' : ' without foreign keys'}: ${top.map(([t, k]) => `${t} (${k})`).join(', ')}`);
  const byClass = QUESTION_CLASSES.map((c) => {
    const s = summarize(run.results.filter((r) => r.class === c));
    return `${c} ${pct(s.recall)} / ${pct(s.complete)} (${s.questions})`;
  });
  console.log(`recall / complete by class: ${byClass.join(', ')}`);
  if (process.env.BENCH_LINKING_MISSES) {
    for (const r of run.results.filter((x) => x.missing.length || x.clarified !== !x.clear)) {
      const clarified = r.clarification ? `; asked about '${r.clarification.word}' (${r.clarification.choices.join(' | ')})` : r.clear ? '' : '; no clarifying question';
      console.log(`- [${r.id} ${r.split} ${r.class}${r.clear ? '' : ' ambiguous'}] ${r.question}\n    missing ${r.missing.join(', ') || 'none'}${clarified}; sent ${r.sent.join(', ')}`);
    }
  }
}

function goals(largest: RealRun | undefined, noFk: RealRun | undefined): void {
  if (!largest || largest.relations < 9000) {
    console.log('\nissue 23 goals are judged at 10,000 relations: not run (BENCH_LINKING_REAL_SIZES)');
    return;
  }
  const judge = (label: string, s: RealSummary, nofk: RealSummary | undefined): string => {
    const parts = [
      [`recall ${pct(s.recall)} (≥ 92 %)`, s.recall >= 0.92],
      [`complete ${pct(s.complete)} (≥ 85 %)`, s.complete >= 0.85],
      [`wrong clarifications ${s.wrong_clarifications_per_100.toFixed(1)} per 100 (≤ 1)`, s.wrong_clarifications_per_100 <= 1],
      [`mean prompt ${n0(s.tokens_mean)} tokens (≤ 3,000)`, s.tokens_mean <= 3000],
      ...(nofk ? [[`without foreign keys recall ${pct(nofk.recall)} (≥ 85 %)`, nofk.recall >= 0.85] as const] : []),
    ] as const;
    return `${label}: ${parts.map(([t, ok]) => `${t} ${ok ? 'met' : 'NOT MET'}`).join('; ')}`;
  };
  console.log(`\nissue 23 goals at ${n0(largest.relations)} relations`);
  console.log(judge('  all questions', largest.summary.all, noFk?.summary.all));
  console.log(judge('  held-out test', largest.summary.test, noFk?.summary.test));
}

export async function realSection(): Promise<RealRun[]> {
  const sizes = realSizes();
  const noFk = (process.env.BENCH_LINKING_REAL_NOFK ?? '1') !== '0';
  const runs: RealRun[] = [];
  const clear = QUESTIONS.filter((q) => q.clear);
  const dev = clear.filter((q) => q.split === 'dev').length;
  console.log(`\nSchema linking — real schemas: ${SOURCES.length} public sample databases (${SOURCES.map((s) => s.id).join(', ')}) in one PostgreSQL database, alone and inside warehouse noise; ${QUESTIONS.length} questions (${clear.length} clear: ${dev} dev, ${clear.length - dev} held-out test; ${QUESTIONS.length - clear.length} ambiguous), through the catalog actor's context handler on the engine's introspection, values from the executor's value index (sql.values, PostgreSQL's statistics; sql.profile is not asked where it answers). Recall, complete, tokens and sent over the clear questions; wrong clarif.: clarifying questions on clear questions per 100 (count); ambiguous asked: clarifying questions on the ambiguous ones. Tokens: the whole SQL prompt, ${TOKENIZER}; ms/q: the handler's time, value lookups included\n`);
  // each run's rows as soon as it is done (the 10,000-relation runs take minutes)
  console.log(HEADER[0]);
  console.log(HEADER[1]);
  const measure = async (size: number, foreignKeys: boolean): Promise<void> => {
    const run = await runRealLinking({ size, foreignKeys });
    runs.push(run);
    for (const split of ['dev', 'test', 'all'] as const) console.log(row(run, split, run.summary[split]));
  };
  let largest: RealRun | undefined;
  try {
    for (const size of sizes) await measure(size, true);
    largest = runs.reduce<RealRun | undefined>((a, b) => (!a || b.relations > a.relations ? b : a), undefined);
    if (noFk && largest) await measure(largest.size, false);
  } catch (err) {
    console.log(`real schemas: stopped (${(err as Error).message}); needs a PostgreSQL at DATABASE_URL (else ${new URL(ADMIN_URL).host})`);
    return runs;
  }
  console.log('');
  for (const run of runs.filter((r) => r.foreign_keys)) {
    console.log(`database ${run.database.name}: ${n0(run.database.relations)} relations, ${n0(run.catalog_foreign_keys)} foreign keys in the catalog, ${run.database.created ? `created now in ${(run.database.ms / 1000).toFixed(1)} s (${n0(run.database.statements)} statements and ANALYZE)` : 'reused'}; introspection ${n0(run.introspect_ms)} ms`);
  }
  for (const run of runs) misses(run);
  goals(largest, runs.find((r) => !r.foreign_keys));
  // BENCH_LINKING_REAL_OUT=file.json: every run with its per-question results, to compare two runs question by question
  const file = process.env.BENCH_LINKING_REAL_OUT;
  if (file) {
    writeFileSync(file, `${JSON.stringify(runs, null, 1)}\n`);
    console.log(`per-question results written to ${file}`);
  }
  return runs;
}
