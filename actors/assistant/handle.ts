/**
 * One question, from words to an answer: schema context → intent and SQL (one model call by
 * default, two when routing splits them) → guarded execution, with self-correction when the
 * database rejects the SQL (the executor masks the rows before it replies) → insights. Every step is timed, reported as progress
 * when the caller streams, and recorded as events (never row values). With
 * query.confirm_before_execute, interactive channels get the SQL and a confirmation id instead,
 * and `confirm` runs exactly that SQL later.
 */
import { randomUUID } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import {
  ChatReply,
  InsightsGenerate,
  IntentDetect,
  QueryExecutedEvt,
  QueryFailedEvt,
  QueryGeneratedEvt,
  QuestionCompletedEvt,
  SchemaContext,
  SqlEstimate,
  SqlExecute,
  SqlGenerate,
} from '../../protocol/subjects.js';
import { ownedKey, parseOwner } from '../../protocol/scope.js';
import type { AskConfirmRequest, AskReply, AskRequest } from '../../protocol/schemas/ask.js';
import { addUsage, ZERO_USAGE, type Channel, type Column, type ColumnLabel, type Dialect, type Usage } from '../../protocol/schemas/common.js';
import type { ProgressEvent } from '../../protocol/schemas/progress.js';
import type { ModelUse, QuestionCompleted } from '../../protocol/schemas/analytics.js';
import type { LlmTask } from '../../protocol/schemas/llm.js';
import type { SqlExecuteReply, SqlGenerateReply } from '../../protocol/schemas/sql.js';
import type { InsightsFollowUp, InsightsGenerateRequest } from '../../protocol/schemas/insights.js';
import type { Kv } from '../../runtime/kv.js';
import type { Logger } from '../../runtime/log.js';
import type { Config } from '../../config/schema.js';
import { resolveRoute, sameRoute } from '../../config/model-routing.js';
import type { Confirmations } from './confirmations.js';
import type { ConversationStore } from './conversations.js';
import { canClarify, clarificationOf, clarifyTurn, meaningOf, modelHistory, pendingClarification, pinQuestion, stillAmbiguous } from './clarify.js';

export interface AssistantDeps {
  bus: Pick<Bus, 'request' | 'publish' | 'progress'>;
  config: Config;
  conversations: ConversationStore;
  /** SQL held for confirmation (query.confirm_before_execute); absent without JetStream KV */
  confirmations?: Confirmations;
  /** hybrid insights that follow the answer, for GET /api/insights/{id}; absent without JetStream KV */
  followUps?: Kv<InsightsFollowUp>;
  log?: Logger;
}

/** Channels where query.execute_generated_sql applies (SPEC: the interactive assistant). */
const INTERACTIVE = new Set(['legacy', 'auth', 'web']);

/**
 * The row cap of one caller (AskRequest.max_rows) as the executor's hard cap: the database
 * returns no more rows than that, and never more than query.max_limit.
 */
function rowCap(maxRows: number | undefined, config: Config): { max_limit?: number } {
  return maxRows === undefined ? {} : { max_limit: Math.min(maxRows, config.query.max_limit) };
}

/**
 * Where a conversation is kept: under its owner (protocol/scope.ts), so no other caller continues
 * it. A question without an owner has no conversation: its conversation_id is not looked up.
 */
function conversationKey(owner: string | undefined, id: string | undefined): string | undefined {
  return id ? ownedKey(owner, id) : undefined;
}

/** Database failures worth showing the model once more. */
function correctable(err: CortadoError): boolean {
  if (err.code === 'DB_QUERY_FAILED') return true;
  return err.code === 'SQL_REJECTED' && err.details?.kind === 'parse';
}

/** What one question (or one confirmation) accumulates as it goes. */
interface Run {
  usage: Usage;
  /** what the question's fact (evt.question.completed) says of it, learnt on the way */
  intent?: AskReply['intent'];
  /** the tables the prompt held */
  tables?: string[];
  /** the tables the SQL that ran reads (the guard's parse): what the fact names when there is one */
  read?: string[];
  /** one step's model use: added to `usage`, and to the model's share (by the reply's model, else its route) */
  use(usage: Usage, model: string | LlmTask): void;
  /** model work that goes on after the answer (hybrid insights): the question's fact waits for its release */
  hold(): () => void;
  timed<T>(name: string, work: () => Promise<T>): Promise<T>;
  /** a step timed elsewhere (the executor's masking), added to the timings */
  note(name: string, ms: number): void;
  progress(step: ProgressEvent['step'], data: Record<string, unknown>): void;
  event(): { id: string; ts: string; request_id: string; user?: string; channel: Channel; widget?: string };
  finish(part: Omit<AskReply, 'request_id' | 'usage' | 'timing_ms'>): AskReply;
  fail(err: unknown): never;
}

function startRun(deps: AssistantDeps, ctx: Ctx, opts: { channel: Channel; question: string; widget?: string; stream?: boolean; conversation_id?: string; owner?: string }): Run {
  const started = performance.now();
  const timing: Record<string, number> = {};
  const models = new Map<string, ModelUse>();
  let seq = 0;
  const base = { request_id: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}), channel: opts.channel, ...(opts.widget ? { widget: opts.widget } : {}) };
  let holds = 0;
  let ended: { row_count?: number; code?: string } | undefined;
  /** the question's fact, once, at its end (answered, chat, or failed) and after what it holds: the analytics actor keeps it */
  const completed = (part: { row_count?: number; code?: string }): void => {
    ended = part;
    timing.total ??= round(performance.now() - started);
    if (holds === 0) publishFact(part);
  };
  const publishFact = (part: { row_count?: number; code?: string }): void => {
    const durations: Record<string, number> = {};
    for (const [step, ms] of Object.entries(timing)) durations[step === 'context' ? 'schema' : step] = ms;
    durations.total = timing.total ?? 0;
    const fact: QuestionCompleted = {
      ...run.event(), question: opts.question, tables: run.read ?? run.tables ?? [], durations, models: [...models.values()],
      ...(opts.widget ? { widget: opts.widget } : {}),
      // whose answer it is: only they may rate it (analytics feedback)
      ...(opts.owner ? { owner: opts.owner } : {}),
      ...(run.intent ? { intent: run.intent } : {}),
      ...part,
    };
    deps.bus.publish(QuestionCompletedEvt, fact, ctx);
  };
  const run: Run = {
    usage: { ...ZERO_USAGE },
    use(usage, model) {
      run.usage = addUsage(run.usage, usage);
      if (usage.llm_calls === 0 && usage.input_tokens === 0 && usage.output_tokens === 0) return;
      const name = model.includes(':') ? model : routeName(deps.config, model as LlmTask);
      const m = models.get(name) ?? { model: name, calls: 0, input_tokens: 0, output_tokens: 0 };
      m.calls += usage.llm_calls;
      m.input_tokens += usage.input_tokens;
      m.output_tokens += usage.output_tokens;
      if (usage.cost_usd !== undefined) m.cost_usd = (m.cost_usd ?? 0) + usage.cost_usd;
      models.set(name, m);
    },
    hold() {
      holds++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        if (--holds === 0 && ended) publishFact(ended);
      };
    },
    async timed(name, work) {
      const t = performance.now();
      try {
        return await work();
      } finally {
        timing[name] = round((timing[name] ?? 0) + performance.now() - t);
      }
    },
    note(name, ms) {
      timing[name] = round((timing[name] ?? 0) + ms);
    },
    progress(step, data) {
      if (opts.stream) deps.bus.progress(ctx.requestId, { step, seq: seq++, data });
    },
    event: () => ({ id: randomUUID(), ts: new Date().toISOString(), ...base }),
    finish(part) {
      timing.total = round(performance.now() - started);
      run.intent = part.intent;
      if (part.tables) run.tables = part.tables;
      completed(part.row_count !== undefined ? { row_count: part.row_count } : {});
      return {
        request_id: ctx.requestId,
        ...(opts.conversation_id ? { conversation_id: opts.conversation_id } : {}),
        ...part,
        usage: run.usage,
        timing_ms: timing,
      };
    },
    fail(err) {
      const e = toCortadoError(err);
      if (e.code !== 'SQL_REJECTED' && e.code !== 'DB_QUERY_FAILED' && e.code !== 'DB_TIMEOUT') {
        deps.bus.publish(QueryFailedEvt, { ...run.event(), code: e.code, message: e.message }, ctx);
      }
      run.progress('error', { error: { code: e.code, message: e.message } });
      completed({ code: e.code });
      throw e;
    },
  };
  return run;
}

export async function ask(input: AskRequest, deps: AssistantDeps, ctx: Ctx): Promise<AskReply> {
  const { bus, config } = deps;
  const run = startRun(deps, ctx, input);
  const { timed, progress } = run;

  try {
    progress('started', { question: input.question });
    let conversation = conversationKey(input.owner, input.conversation_id);
    const turns = conversation ? await timed('history', () => deps.conversations.load(conversation!)) : [];

    // an answer to the clarifying question of the last turn: that question again, its meaning pinned
    const pending = pendingClarification(turns);
    const pinned = pending
      ? pinQuestion(pending.question, [...(pending.clarification.pinned ?? []), meaningOf(input.question, pending.clarification)], input.tables, pending.clarification)
      : undefined;
    const question = pinned?.question ?? input.question;
    const tables = pinned ? pinned.tables : input.tables;
    const history = modelHistory(turns);

    const context = await timed('context', () =>
      bus.request(SchemaContext, {
        question,
        ...(tables?.length ? { tables } : {}),
        history: history.map((t) => t.question),
        ...(pinned ? { clarified: pinned.clarified } : {}),
      }, ctx),
    );
    run.tables = context.tables;
    // the model call that picked the tables (catalog.linking: model) counts with the question's
    if (context.usage) run.use(context.usage, 'table_selection');
    progress('context', { tables: context.tables, ...(context.linking ? { linking: context.linking } : {}) });

    // a word two tables or metrics tie for: ask which one, once, rather than guess
    if (canClarify(input.channel) && stillAmbiguous(context.ambiguity, pinned?.clarified ?? [])) {
      const original = pending?.question ?? input.question;
      let conversationId = conversation ? input.conversation_id : undefined;
      if (!conversation && input.owner) {
        // a conversation of its own, so the answer can come back to it
        conversationId = randomUUID();
        conversation = conversationKey(input.owner, conversationId);
      }
      await deps.conversations.append(conversation, clarifyTurn(original, context.ambiguity, pinned?.pinned ?? [], context.tables));
      const clarification = clarificationOf(context.ambiguity);
      run.intent = 'clarify';
      progress('clarify', clarification);
      return run.finish({
        intent: 'clarify', message: clarification.question, clarification, tables: context.tables,
        ...(conversationId ? { conversation_id: conversationId } : {}),
      });
    }

    const sqlRoute = resolveRoute(config, 'sql');
    const split = !sameRoute(resolveRoute(config, 'intent_detection'), sqlRoute);
    const chatSplit = !sameRoute(resolveRoute(config, 'chat'), sqlRoute);
    const genBase = {
      question,
      history,
      schema_text: context.schema_text,
      business_context: context.business_context,
      dialect: context.dialect,
      ...(input.prompts ? { prompts: input.prompts } : {}),
    };

    let intent: 'sql' | 'chat';
    let generated: SqlGenerateReply | undefined;
    if (split) {
      const detected = await timed('intent', () =>
        bus.request(IntentDetect, { question, history, schema_text: context.schema_text }, ctx),
      );
      run.use(detected.usage, 'intent_detection');
      intent = detected.intent;
    } else {
      generated = await timed('generate', () => bus.request(SqlGenerate, { ...genBase, mode: 'combined' }, ctx));
      run.use(generated.usage, generated.model);
      intent = generated.intent;
    }
    run.intent = intent;
    progress('intent', { intent });

    if (intent === 'chat') {
      let message = generated?.message;
      if (message === undefined || split || chatSplit) {
        const chat = await timed('chat', () =>
          bus.request(ChatReply, { question, history, schema_text: context.schema_text }, ctx),
        );
        run.use(chat.usage, 'chat');
        message = chat.message;
      }
      await deps.conversations.append(conversation, { question, answer: message });
      return run.finish({ intent: 'chat', message });
    }

    if (!generated || generated.intent !== 'sql') {
      generated = await timed('generate', () => bus.request(SqlGenerate, { ...genBase, mode: 'sql' }, ctx));
      run.use(generated.usage, generated.model);
    }
    if (!generated.sql) {
      throw new CortadoError('LLM_BAD_REPLY', generated.intent === 'chat' ? 'the model answered with chat where SQL was needed' : 'the model wrote no SQL');
    }
    let sql = generated.sql;
    let explanation = generated.explanation;
    bus.publish(QueryGeneratedEvt, { ...run.event(), question, sql, model: generated.model, usage: generated.usage, attempt: 0 }, ctx);

    const interactive = INTERACTIVE.has(input.channel);
    if (interactive && !config.query.execute_generated_sql) {
      // SQL handed to a person to copy is checked as if it were run: a DROP the model wrote is
      // refused as it would be, and what is shown is what Cortado would have run (with its LIMIT)
      const est = await timed('estimate', () => bus.request(SqlEstimate, { sql }, ctx));
      progress('sql', { sql: est.sql, ...(explanation ? { explanation } : {}) });
      await deps.conversations.append(conversation, { question, sql: est.sql, ...(explanation ? { answer: explanation } : {}) });
      return run.finish({ intent: 'sql', sql: est.sql, ...(explanation ? { explanation } : {}), executed: false, tables: context.tables });
    }
    progress('sql', { sql, ...(explanation ? { explanation } : {}) });

    // SPEC: confirmation is for the two interactive widgets; an API token (owner `t:`) always
    // executes, on whichever route it asks: a program has nobody to press the button
    const byToken = input.owner !== undefined && parseOwner(input.owner)?.kind === 'token';
    if (interactive && config.query.confirm_before_execute && !byToken) {
      if (!deps.confirmations) throw new CortadoError('INTERNAL', 'query.confirm_before_execute needs JetStream KV, which is not available');
      // the guard (and BigQuery's dry run) now, so nobody is asked to confirm SQL that cannot run
      const est = await timed('estimate', () => bus.request(SqlEstimate, { sql }, ctx));
      const cost = {
        ...(est.bytes_processed !== undefined ? { bytes_processed: est.bytes_processed } : {}),
        ...(est.estimated_cost_usd !== undefined ? { estimated_cost_usd: est.estimated_cost_usd } : {}),
      };
      const held = await deps.confirmations.hold({
        sql: est.sql, question, owner: input.owner ?? '', channel: input.channel, dialect: context.dialect, tables: context.tables,
        ...(explanation ? { explanation } : {}),
        ...(input.conversation_id ? { conversation_id: input.conversation_id } : {}),
      });
      return run.finish({
        intent: 'sql', sql: est.sql, ...(explanation ? { explanation } : {}), executed: false, tables: context.tables,
        confirmation: { ...held, ...cost }, ...cost,
      });
    }

    let result: SqlExecuteReply | undefined;
    let attempt = 0;
    for (;;) {
      try {
        result = await timed('execute', () => bus.request(SqlExecute, { sql, ...rowCap(input.max_rows, config) }, ctx));
        break;
      } catch (err) {
        const e = toCortadoError(err);
        if (!correctable(e) || attempt >= config.query.max_corrections) throw e;
        attempt++;
        const fixed = await timed('generate', () =>
          bus.request(SqlGenerate, { ...genBase, mode: 'sql', previous: { sql, error: e.message } }, ctx),
        );
        run.use(fixed.usage, fixed.model);
        if (!fixed.sql) throw e;
        sql = fixed.sql;
        explanation = fixed.explanation ?? explanation;
        bus.publish(QueryGeneratedEvt, { ...run.event(), question, sql, model: fixed.model, usage: fixed.usage, attempt }, ctx);
        progress('sql', { sql, ...(explanation ? { explanation } : {}), attempt });
      }
    }
    return await deliver(run, deps, ctx, {
      result, attempt, question, dialect: context.dialect, tables: context.tables, stream: input.stream === true,
      ...(context.column_labels?.length ? { labels: context.column_labels } : {}),
      ...(explanation ? { explanation } : {}),
      ...(conversation ? { conversation } : {}),
    });
  } catch (err) {
    return run.fail(err);
  }
}

/** Run exactly the SQL a confirmation holds, once, for the owner that asked. */
export async function confirm(input: AskConfirmRequest, deps: AssistantDeps, ctx: Ctx): Promise<AskReply> {
  if (!deps.confirmations) throw new CortadoError('NOT_FOUND', 'there is no such confirmation (confirmations need JetStream KV)');
  const pending = await deps.confirmations.take(input.confirmation_id, input.owner);
  const run = startRun(deps, ctx, { channel: pending.channel, question: pending.question, owner: input.owner, ...(input.widget ? { widget: input.widget } : {}), ...(input.stream ? { stream: true } : {}), ...(pending.conversation_id ? { conversation_id: pending.conversation_id } : {}) });
  run.intent = 'sql';
  run.tables = pending.tables;
  try {
    run.progress('started', { question: pending.question, confirmation_id: input.confirmation_id });
    const result = await run.timed('execute', () => deps.bus.request(SqlExecute, { sql: pending.sql, ...rowCap(input.max_rows, deps.config) }, ctx));
    const conversation = conversationKey(pending.owner, pending.conversation_id);
    return await deliver(run, deps, ctx, {
      result, attempt: 0, question: pending.question, dialect: pending.dialect, tables: pending.tables, stream: input.stream === true,
      ...(pending.explanation ? { explanation: pending.explanation } : {}),
      ...(conversation ? { conversation } : {}),
    });
  } catch (err) {
    return run.fail(err);
  }
}

/** Rows that ran (masked by the executor before it replied), insights, the event, the turn, the reply. */
async function deliver(
  run: Run,
  deps: AssistantDeps,
  ctx: Ctx,
  p: { result: SqlExecuteReply; attempt: number; question: string; explanation?: string; conversation?: string; dialect: Dialect; tables: string[]; stream: boolean; labels?: ColumnLabel[] },
): Promise<AskReply> {
  const { bus, config } = deps;
  const executed = p.result;
  // the tables the SQL read (the guard's parse), for analytics' busiest tables, rather than every table the prompt held
  if (executed.tables?.length) run.read = executed.tables;
  // masking is part of execution (sql.execute masks before it replies): its time, as a step of its own
  run.note('mask', executed.mask_ms);
  // the columns the semantic layer names carry its display name and format (the pages show them; the SQL keeps its names)
  const named = new Map((p.labels ?? []).map((l) => [l.name, l]));
  const result = named.size ? { ...executed, columns: executed.columns.map((c) => labelled(c, named.get(c.name))) } : executed;
  const masked = executed.masked.map((m) => ({ column: m.column, strategy: m.strategy }));
  run.progress('rows', { sql: result.sql, columns: result.columns, rows: result.rows, row_count: result.row_count, truncated: result.truncated, ...(masked.length ? { masked } : {}) });

  let insights: AskReply['insights'] = [];
  let later: FollowUp | undefined;
  if (config.insights.enabled) {
    // the same masked rows the reply carries: nothing unmasked reaches the insights (or the model)
    const request: InsightsGenerateRequest = {
      question: p.question,
      sql: result.sql,
      columns: result.columns,
      rows: result.rows,
      row_count: result.row_count,
      truncated: result.truncated,
      ...(masked.length ? { masked_columns: masked.map((m) => m.column) } : {}),
    };
    // hybrid: the statistical insights now, the model's after the answer (followUp below)
    later = result.rows.length > 0 ? followUpWay(deps, run.event().channel, p.stream) : undefined;
    const follow = later ? openFollowUp(deps, ctx, later) : undefined;
    const generatedInsights = await run.timed('insights', () =>
      bus.request(InsightsGenerate, later ? { ...request, part: 'statistical' } : request, ctx),
    );
    run.use(generatedInsights.usage, 'insights');
    insights = generatedInsights.insights;
    run.progress('insights', { insights, ...(later ? { pending: true } : {}) });
    if (later && follow) later = await follow;
    if (later) followUp(deps, run, ctx, request, insights, later);
  }

  bus.publish(QueryExecutedEvt, {
    ...run.event(), sql: result.sql, duration_ms: result.duration_ms, row_count: result.row_count, truncated: result.truncated, usage: run.usage, attempt: p.attempt,
    // the guard's relations (none read: an empty list), so the alerts need not lex the SQL for them
    tables: result.tables ?? [],
  }, ctx);
  await deps.conversations.append(p.conversation, { question: p.question, sql: result.sql, ...(p.explanation ? { answer: p.explanation } : {}) });
  return run.finish({
    intent: 'sql',
    sql: result.sql,
    ...(p.explanation ? { explanation: p.explanation } : {}),
    columns: result.columns,
    rows: result.rows,
    row_count: result.row_count,
    truncated: result.truncated,
    insights,
    executed: true,
    corrections: p.attempt,
    tables: p.tables,
    ...(later ? { insights_pending: true, ...(later.id ? { insights_id: later.id } : {}) } : {}),
    ...(masked.length ? { masked } : {}),
    ...(result.bytes_processed !== undefined ? { bytes_processed: result.bytes_processed } : {}),
    ...(result.estimated_cost_usd !== undefined ? { estimated_cost_usd: result.estimated_cost_usd } : {}),
  });
}

// ---- hybrid insights: the model's follow the answer ---------------------------------------

/** Channels whose edge can fetch a follow-up (GET /api/insights/{id}); MCP and schedules read one whole result. */
const FOLLOW_UP_CHANNELS: ReadonlySet<Channel> = new Set<Channel>(['api', 'legacy', 'auth', 'web']);

/** How the model's insights of a hybrid answer reach the caller: its stream, and/or a KV key. */
interface FollowUp {
  stream: boolean;
  /** the key of GET /api/insights/{id} */
  id?: string;
}

/**
 * Whether the model's insights can follow the answer rather than hold it up: in `hybrid`, when
 * the caller streams (an SSE event) or can fetch them later (KV, interactive channels). Else
 * the answer waits for them (MCP tools and scheduled runs read one whole result).
 */
function followUpWay(deps: AssistantDeps, channel: Channel, stream: boolean): FollowUp | undefined {
  if (deps.config.insights.mode !== 'hybrid') return undefined;
  const kv = deps.followUps !== undefined && FOLLOW_UP_CHANNELS.has(channel);
  if (!stream && !kv) return undefined;
  return { stream, ...(kv ? { id: randomUUID() } : {}) };
}

/** The pending record, written while the statistical insights are computed (so a GET never misses it). */
async function openFollowUp(deps: AssistantDeps, ctx: Ctx, way: FollowUp): Promise<FollowUp | undefined> {
  if (!way.id || !deps.followUps) return way;
  const until = new Date(Date.now() + InsightsGenerate.timeoutMs).toISOString();
  try {
    await deps.followUps.put(way.id, { request_id: ctx.requestId, status: 'pending', insights: [], until });
    return way;
  } catch (err) {
    deps.log?.warn({ rid: ctx.requestId, err: (err as Error).message }, 'cannot keep the model insights for later: they follow on the stream only');
    return way.stream ? { stream: true } : undefined;
  }
}

/**
 * In the background, once the answer is on its way: the insights of the whole mode (the
 * model's with the statistical ones), as the `model_insights` progress step and under the KV
 * key. A failure says so (`failed`, with the statistical insights), never silently.
 */
function followUp(deps: AssistantDeps, run: Run, ctx: Ctx, request: InsightsGenerateRequest, statistical: AskReply['insights'], way: FollowUp): void {
  const release = run.hold();
  void (async () => {
    let record: InsightsFollowUp;
    try {
      const full = await deps.bus.request(InsightsGenerate, request, ctx);
      record = {
        request_id: ctx.requestId,
        status: full.model_status === 'ok' ? 'ready' : 'failed',
        insights: full.insights,
        usage: full.usage,
        ...(full.model_status ? { model_status: full.model_status } : {}),
      };
    } catch (err) {
      const e = toCortadoError(err);
      deps.log?.warn({ rid: ctx.requestId, code: e.code, reason: e.message }, 'model insights failed: the statistical insights stand');
      record = { request_id: ctx.requestId, status: 'failed', insights: statistical ?? [], usage: { ...ZERO_USAGE }, model_status: 'unavailable' };
    }
    // the model's tokens and cost belong to the question's fact (published once this releases)
    run.use(record.usage ?? ZERO_USAGE, 'insights');
    release();
    if (way.stream) run.progress('model_insights', record);
    if (way.id && deps.followUps) {
      await deps.followUps.put(way.id, record).catch((err: unknown) => {
        deps.log?.warn({ rid: ctx.requestId, err: (err as Error).message }, 'cannot keep the model insights for later');
      });
    }
  })();
}

/** `provider:model` of a task's route (for replies that do not say their model). */
function routeName(config: Config, task: LlmTask): string {
  const r = resolveRoute(config, task);
  return `${r.provider}:${r.model}`;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/** A result column with what the semantic layer says of it (its label, its format), when it says anything. */
function labelled(c: Column, l: ColumnLabel | undefined): Column {
  if (!l) return c;
  return { ...c, ...(l.label ? { label: l.label } : {}), ...(l.format ? { format: l.format } : {}) };
}
