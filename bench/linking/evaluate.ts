/**
 * Schema-linking evaluation: run a table selector over a generated catalog's questions and
 * measure what the model would get.
 *
 * - recall: answer tables present in the selection, over all answer tables of all questions;
 * - complete: the share of questions whose every answer table is present;
 * - noise share: among the tables sent, those that are generated noise (copies, staging,
 *   reports, unrelated), over all tables sent; `extra share` counts every table sent that is
 *   not an answer table (real ones too);
 * - prompt tokens: the whole SQL-generation prompt the model reads (system + user message, built
 *   by actors/sqlgen buildSqlPrompt from the shipped prompts, the schema text and business context
 *   included), counted with js-tiktoken's o200k_base encoding (the GPT-4o tokenizer; Claude's
 *   differs by a few per cent), mean and 95th percentile.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import o200k from 'js-tiktoken/ranks/o200k_base';
import type { Config } from '../../config/schema.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import { buildCatalog, type Catalog } from '../../actors/catalog/catalog.js';
import { renderSchemaText } from '../../actors/catalog/schema-text.js';
import { buildSqlPrompt } from '../../actors/sqlgen/handle.js';
import { testConfig } from '../../test/helpers/config.js';
import type { GeneratedCatalog, LinkingQuestion } from './generate.js';

export interface LinkingSelection {
  tables: string[];
  /** the schema text sent; rendered from `tables` when not given */
  schema_text?: string;
  business_context?: string;
}

export type Selector = (generated: GeneratedCatalog, question: LinkingQuestion) => LinkingSelection | string[] | Promise<LinkingSelection | string[]>;

export interface QuestionResult {
  question: string;
  answer_tables: string[];
  sent: string[];
  missing: string[];
  noise_sent: number;
  tokens: number;
  ms: number;
}

export interface LinkingReport {
  tables: number;
  questions: number;
  /** 0..1 */
  recall: number;
  complete: number;
  noise_share: number;
  extra_share: number;
  tables_sent_mean: number;
  tokens_mean: number;
  tokens_p95: number;
  /** selection time per question, mean and p95 (ms) */
  select_ms_mean: number;
  select_ms_p95: number;
  tokenizer: string;
  results: QuestionResult[];
}

export const TOKENIZER = 'o200k_base (js-tiktoken)';

let encoder: Tiktoken | undefined;
export function countTokens(text: string): number {
  encoder ??= new Tiktoken(o200k);
  return encoder.encode(text).length;
}

const catalogs = new WeakMap<GeneratedCatalog, Catalog>();
/** the catalog actor's view of a generated catalog, built once per catalog */
export function catalogOf(generated: GeneratedCatalog): Catalog {
  let c = catalogs.get(generated);
  if (!c) {
    c = buildCatalog(generated.introspection);
    catalogs.set(generated, c);
  }
  return c;
}

let defaultConfig: Config | undefined;
/** the shipped configuration (prompts, limits) as a test parses it */
export function benchConfig(): Config {
  defaultConfig ??= testConfig({ natsUrl: 'nats://127.0.0.1:4222' });
  return defaultConfig;
}

const FIXED_NOW = new Date('2026-11-25T12:00:00Z');

/** Tokens of the SQL-generation prompt for a question with this schema text and business context. */
export function promptTokens(generated: GeneratedCatalog, question: string, schemaText: string, businessContext: string, config: Config = benchConfig()): number {
  return promptTokensFor(generated.introspection.dialect, question, schemaText, businessContext, config);
}

/** The same for any catalog: the whole SQL prompt of a question in this dialect. */
export function promptTokensFor(dialect: Dialect, question: string, schemaText: string, businessContext: string, config: Config = benchConfig()): number {
  const { system, messages } = buildSqlPrompt({
    question, schema_text: schemaText, business_context: businessContext, dialect, history: [], mode: 'combined',
  }, config, FIXED_NOW);
  return countTokens(system) + messages.reduce((n, m) => n + countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content)), 0);
}

export function percentile(xs: readonly number[], p: number): number {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

/** Run `select` over every question of the catalog and measure the selections. */
export async function evaluateLinking(generated: GeneratedCatalog, select: Selector, options: { config?: Config } = {}): Promise<LinkingReport> {
  const results: QuestionResult[] = [];
  let answers = 0;
  let found = 0;
  let complete = 0;
  let sentTotal = 0;
  let noiseTotal = 0;
  let extraTotal = 0;
  for (const q of generated.questions) {
    const t0 = performance.now();
    const raw = await select(generated, q);
    const ms = performance.now() - t0;
    const selection: LinkingSelection = Array.isArray(raw) ? { tables: raw } : raw;
    const sent = [...new Set(selection.tables)];
    const sentSet = new Set(sent);
    const missing = q.answer_tables.filter((a) => !sentSet.has(a));
    const answerSet = new Set(q.answer_tables);
    const noiseSent = sent.filter((s) => generated.noise[s] !== undefined).length;
    answers += q.answer_tables.length;
    found += q.answer_tables.length - missing.length;
    if (!missing.length) complete++;
    sentTotal += sent.length;
    noiseTotal += noiseSent;
    extraTotal += sent.filter((s) => !answerSet.has(s)).length;
    const schemaText = selection.schema_text ?? renderSchemaText(catalogOf(generated), sent);
    const tokens = promptTokens(generated, q.question, schemaText, selection.business_context ?? '', options.config);
    results.push({ question: q.question, answer_tables: q.answer_tables, sent, missing, noise_sent: noiseSent, tokens, ms });
  }
  const tokens = results.map((r) => r.tokens);
  const times = results.map((r) => r.ms);
  return {
    tables: generated.introspection.tables.length,
    questions: results.length,
    recall: answers ? found / answers : NaN,
    complete: results.length ? complete / results.length : NaN,
    noise_share: sentTotal ? noiseTotal / sentTotal : 0,
    extra_share: sentTotal ? extraTotal / sentTotal : 0,
    tables_sent_mean: results.length ? sentTotal / results.length : 0,
    tokens_mean: mean(tokens),
    tokens_p95: percentile(tokens, 0.95),
    select_ms_mean: mean(times),
    select_ms_p95: percentile(times, 0.95),
    tokenizer: TOKENIZER,
    results,
  };
}

/** One line of the report table: `| 1,000 | 94 | 45.1 % | … |`. */
export function reportRow(r: LinkingReport): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return `| ${n(r.tables).padStart(6)} | ${String(r.questions).padStart(9)} | ${pct(r.recall).padStart(7)} | ${pct(r.complete).padStart(8)} | ${pct(r.noise_share).padStart(7)} | ${r.tables_sent_mean.toFixed(1).padStart(6)} | ${`${n(r.tokens_mean)} / ${n(r.tokens_p95)}`.padStart(15)} | ${r.select_ms_mean.toFixed(1).padStart(7)} |`;
}

export const REPORT_HEADER = [
  '| tables | questions |  recall | complete |   noise |   sent | tokens mean/p95 | ms/q    |',
  '| -----: | --------: | ------: | -------: | ------: | -----: | --------------: | ------: |',
];
