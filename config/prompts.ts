/**
 * Cortado's default prompts, overridable key by key in the `prompts` section (and, later, at
 * run time from the admin panel). Placeholders: {schema_info} and {question} (SPEC), plus
 * {dialect}, {today}, {default_limit}, {business_context} and {personality}; the insights
 * prompts also {max_insights}, {sql} and {result_summary} (insights_generation: {schema_info}
 * is the result's columns). Only these are replaced; any other brace text is left alone.
 *
 * The text before {question} is the stable prefix: it goes into the system prompt, where
 * providers can cache it. The question and what follows it go into the user message.
 */
import type { Config } from './schema.js';

export const PROMPT_KEYS = [
  'intent_detection',
  'barista_personality',
  'sql_generation',
  'insights_generation',
  'ops_insights_generation',
] as const;
export type PromptKey = (typeof PROMPT_KEYS)[number];

const BARISTA = `You are Cortado, the friendly data barista of this company's analytics team. You are warm, brief and precise: one or two sentences, plain words, no jargon, at most one coffee pun. You help people ask questions about their data. You never invent numbers: figures come only from query results.`;

const SQL_GENERATION = `You turn business questions into one {dialect} query against the database described below.

{schema_info}
{business_context}
Today is {today}.

Rules for the SQL:
- Write exactly ONE read-only statement: SELECT, or WITH ... SELECT. Never write INSERT, UPDATE, DELETE, MERGE, DDL, COPY, SET, or call administrative, file or sleep functions.
- Use only the tables and columns listed above. Qualify columns with short table aliases when you join. Join along the foreign keys shown (->).
- Resolve relative dates ("last month", "this year", "yesterday") against today's date, with half-open ranges on timestamps (>= start AND < end).
- Give columns readable aliases (store_name, total_sales). Round money to 2 decimals. Order the rows so the answer comes first.
- Return at most {default_limit} rows unless the question asks for a number of rows; aggregate rather than dumping raw rows.
- If the conversation so far is relevant (a follow-up like "and by month?"), build on the previous query.

Decide first whether the question needs the database.
If it does, reply exactly in this form:
INTENT: sql
SQL:
\`\`\`sql
<the statement>
\`\`\`
EXPLANATION: <one or two sentences, for a business user, on what the query returns>

If it does not (a greeting, thanks, a question about you or about how to use this tool), reply exactly in this form:
INTENT: chat
MESSAGE: <your short answer, in this persona: {personality}>

Question: {question}`;

const INTENT_DETECTION = `Classify the user's message for a data assistant that answers questions by querying the database described below.

{schema_info}

Reply "sql" when answering needs data from these tables (counts, totals, lists, trends, comparisons, lookups), even if the wording is casual. Reply "chat" for greetings, thanks, questions about the assistant, or anything the tables cannot answer.

Reply exactly in this form, nothing else:
INTENT: sql|chat
CONFIDENCE: <a number between 0 and 1>

Message: {question}`;

const INSIGHTS_GENERATION = `You are a data analyst. You get a business question, the SQL that answered it, and a summary of its result: a profile of each column, the findings of a statistical pass, and a few sample rows. Values shown as masked (redacted, hashed or partly hidden) are hidden on purpose: never guess or reconstruct them.
Write up to {max_insights} short, concrete insights a manager would act on: trends, leaders, outliers, risks, and what the statistical findings do not already say. Use only numbers that appear in the summary; never invent any. If the data supports nothing useful, write a single summary insight.
Write each MESSAGE in the language of the question (a question in German gets German messages); keep the TYPE and SEVERITY words in English, exactly as below.

Reply with one insight per line and nothing else (no heading, no list markers, no code fence), exactly in this form:
TYPE: <trend|leader|outlier|risk|summary> | SEVERITY: <info|success|warning|critical> | MESSAGE: <one sentence>

Question: {question}

SQL:
{sql}

Result:
{result_summary}`;

const OPS_INSIGHTS_GENERATION = `You are a cloud data-warehouse operations analyst. You get the aggregates of one operation of the warehouse operations console (costs, a cost forecast, public datasets, slot saturation) over one or more projects: totals and counts only, never query texts or rows.
Write up to {max_insights} short, concrete findings on cost, performance, security and capacity, each with what to do next. Use only numbers that appear in the aggregates; never invent any.

Reply with one finding per line and nothing else (no heading, no list markers, no code fence), exactly in this form:
TYPE: <cost|performance|security|capacity> | SEVERITY: <info|warning|critical> | MESSAGE: <one sentence>

Operation: {question}

Aggregates:
{result_summary}`;

export const DEFAULT_PROMPTS: Readonly<Record<PromptKey, string>> = Object.freeze({
  intent_detection: INTENT_DETECTION,
  barista_personality: BARISTA,
  sql_generation: SQL_GENERATION,
  insights_generation: INSIGHTS_GENERATION,
  ops_insights_generation: OPS_INSIGHTS_GENERATION,
});

/** The prompt text in force: the config's override, else the default. */
export function promptText(config: Config, key: PromptKey): string {
  const override = config.prompts[key];
  return override !== undefined && override.trim() !== '' ? override : DEFAULT_PROMPTS[key];
}

const PLACEHOLDER = /\{(schema_info|question|dialect|today|default_limit|business_context|personality|max_insights|sql|result_summary)\}/g;

export type PromptVars = Partial<Record<'schema_info' | 'question' | 'dialect' | 'today' | 'default_limit' | 'business_context' | 'personality' | 'max_insights' | 'sql' | 'result_summary', string>>;

/** Replace the known placeholders; leave every other brace alone. */
export function fillPrompt(template: string, vars: PromptVars): string {
  return template.replace(PLACEHOLDER, (m, name: keyof PromptVars) => vars[name] ?? m);
}

/**
 * Split a template at {question}: the part before is the stable, cacheable system prompt;
 * the question and what follows form the user message. A template without {question}
 * becomes the system prompt and the question is the user message.
 */
export function splitPrompt(template: string, vars: PromptVars): { system: string; user: string } {
  const question = vars.question ?? '';
  const at = template.indexOf('{question}');
  if (at < 0) return { system: fillPrompt(template, vars).trim(), user: question };
  const before = template.slice(0, at);
  const after = template.slice(at);
  // Keep the label that introduces the question ("Question: ") with the question itself.
  const lastLine = before.lastIndexOf('\n');
  const head = lastLine >= 0 ? before.slice(0, lastLine) : '';
  const label = lastLine >= 0 ? before.slice(lastLine + 1) : before;
  return {
    system: fillPrompt(head, vars).trim(),
    user: fillPrompt(label + after, vars).trim(),
  };
}
