/**
 * `cortado eval FILE`: golden questions (YAML or JSON) through the live pipeline, with the
 * configured model; execution accuracy, schema-linking recall, tokens and latency per question
 * and in total, as a table or `--json`. The eval actor does the work (`eval.run`,
 * actors/eval/handle.ts); this command reads the file, asks, shows progress and the report.
 *
 *   cortado eval golden.yaml [--config FILE] [--json] [--min-accuracy 0.8] [--in-process]
 *
 * It asks a running Cortado over NATS (`bus.url`, `bus.prefix` of the config), whose actors
 * must include `eval`; `--in-process` starts the actors in this process instead (no HTTP). Exit 0 when the accuracy is at least
 * `--min-accuracy` (0..1, or a percentage), 1 when below it (or when no question could be
 * asked), 2 for a bad file or option.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Compile } from 'typebox/compile';
import { Bus } from '../runtime/bus.js';
import { CortadoError } from '../protocol/errors.js';
import { createLogger } from '../runtime/log.js';
import { ALL_ACTORS, EvalRun } from '../protocol/subjects.js';
import { EvalProgress, type EvalReport, type GoldenQuestion } from '../protocol/schemas/eval.js';
import type { Config } from '../config/schema.js';
import { parseGolden } from '../actors/eval/golden.js';
import { runCortado, type Running } from './run.js';

const checkProgress = Compile(EvalProgress);

export const EVAL_HELP = `usage: cortado eval FILE [--config FILE] [--json] [--min-accuracy X] [--in-process]

FILE: golden questions, YAML or JSON — a list (or {questions: [...]}) of
  {id?, question, expected_sql | expected_rows, expected_tables?, ordered?}`;

function option(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** The first argument after `eval` that is neither an option nor an option's value. */
function fileArg(argv: readonly string[]): string | undefined {
  const valued = new Set(['--config', '--min-accuracy', '--role', '--port']);
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (valued.has(a)) {
      i++;
      continue;
    }
    if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/** `0.8`, `80` or `80%` → 0.8; undefined when absent; throws on anything else. */
export function parseMinAccuracy(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text.replace(/%$/, '').trim());
  if (!Number.isFinite(n) || n < 0 || n > 100 || text.trim() === '') throw new Error(`--min-accuracy must be a share (0..1) or a percentage, not "${text}"`);
  return text.trim().endsWith('%') || n > 1 ? n / 100 : n;
}

export async function runEvalCommand(config: Config, argv: readonly string[]): Promise<number> {
  const out = (s: string): boolean => process.stdout.write(`${s}\n`);
  const err = (s: string): boolean => process.stderr.write(`cortado eval: ${s}\n`);
  const json = argv.includes('--json');
  const file = fileArg(argv);
  if (!file) {
    err(`name the golden questions file\n\n${EVAL_HELP}`);
    return 2;
  }
  let minAccuracy: number | undefined;
  let golden: GoldenQuestion[];
  try {
    minAccuracy = parseMinAccuracy(option(argv, '--min-accuracy'));
    golden = parseGolden(readFileSync(file, 'utf8'), file);
  } catch (e) {
    err(e instanceof CortadoError ? e.message : (e as Error).message);
    return 2;
  }

  const log = createLogger({ svc: 'eval', level: 'warn' });
  let bus: Bus;
  let running: Running | undefined;
  try {
    if (argv.includes('--in-process')) {
      running = await runCortado({ config, roles: { edge: false, actors: [...ALL_ACTORS] }, log, name: `cortado-eval-${process.pid}` });
      bus = running.bus;
    } else {
      bus = await Bus.connect({ url: config.bus.url, prefix: config.bus.prefix, name: `cortado-eval-${process.pid}`, log });
    }
  } catch (e) {
    err(`cannot reach the pipeline at ${config.bus.url}: ${(e as Error).message}`);
    return 1;
  }
  const requestId = `eval-${randomUUID().slice(0, 8)}`;
  // each question judged, while the run goes on (the report comes only at its end)
  const stopProgress = json ? undefined : bus.onProgress(requestId, (ev) => {
    if (ev.step === 'evaluated' && checkProgress.Check(ev.data)) process.stderr.write(`  ${ev.data.index}/${ev.data.of} ${ev.data.verdict}\n`);
  });
  try {
    if (!json) process.stderr.write(`cortado eval: ${golden.length} question${golden.length === 1 ? '' : 's'} from ${file}\n`);
    let report: EvalReport;
    try {
      // across NATS even in-process: the progress, published on the way, then comes before the report
      ({ report } = await bus.request(EvalRun, { golden }, { requestId, user: 'eval' }, { remote: true }));
    } catch (e) {
      err((e as Error).message);
      return 1;
    }
    const passed = minAccuracy === undefined ? report.results.some((r) => r.verdict !== 'error') : report.totals.accuracy >= minAccuracy;
    if (json) out(JSON.stringify({ ...report, ...(minAccuracy !== undefined ? { min_accuracy: minAccuracy } : {}), passed }, null, 2));
    else {
      out(formatReport(report));
      if (minAccuracy !== undefined) out(`${passed ? 'passed' : 'FAILED'}: minimum accuracy ${(minAccuracy * 100).toFixed(1)} %`);
    }
    return passed ? 0 : 1;
  } finally {
    stopProgress?.();
    if (running) await running.stop(3_000).catch(() => undefined);
    else await bus.close().catch(() => undefined);
  }
}

// ---- the report as text ------------------------------------------------------------------------

function pct(x: number | undefined): string {
  return x === undefined ? '-' : `${(x * 100).toFixed(1)} %`;
}

function cut(text: string, n: number): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/** A plain-text table: one line per question, then the totals. */
export function formatReport(report: EvalReport): string {
  const rows = report.results.map((r) => [r.id, cut(r.question, 48), r.verdict, pct(r.recall), `${r.input_tokens}+${r.output_tokens}`, r.latency_ms.toFixed(0), cut(r.reason ?? '', 40)]);
  const head = ['id', 'question', 'result', 'recall', 'tokens', 'ms', 'why'];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c]!.length)));
  const line = (cells: readonly string[]): string => cells.map((x, c) => x.padEnd(widths[c]!)).join('  ').trimEnd();
  const t = report.totals;
  return [
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `execution accuracy: ${pct(t.accuracy)} (${t.correct} of ${t.questions})`,
    `schema-linking recall: ${pct(t.recall)}`,
    `tokens: ${t.input_tokens} in, ${t.output_tokens} out`,
    `latency: mean ${t.latency_ms_mean.toFixed(0)} ms, p95 ${t.latency_ms_p95.toFixed(0)} ms`,
  ].join('\n');
}
