/**
 * Analytics of how Cortado is used: each question's fact (evt.question.completed) kept once,
 * thumbs given to an answer, and the report over them (store/analytics.ts computes it).
 *
 * - The question's text travels in the event (the audit log has it anyway); it is kept here
 *   only when analytics.store_questions is on: questions can hold personal data, and the audit
 *   log already keeps them under its own access rules and retention.
 * - Feedback is its question's asker's: the edge says who rates (the owner, protocol/scope.ts)
 *   and a rating from anyone but the question's owner is refused (FORBIDDEN). It may name a
 *   question whose event has not arrived yet (it races the event): it is kept, the report joins
 *   it once the question is there if the owners match, and feedback whose question never comes
 *   is forgotten after a day (store/analytics.ts ORPHAN_FEEDBACK_MS).
 * - Report filters: `from` inclusive, `to` exclusive (a bare date YYYY-MM-DD as `to` means the
 *   end of that day), the last 30 days when absent; a time that cannot be read, or a range that
 *   ends before it starts or spans more than MAX_RANGE_DAYS, is VALIDATION_FAILED.
 */
import { CortadoError } from '../../protocol/errors.js';
import type { AnalyticsReport, FeedbackRequest, QuestionCompleted, ReportFilter } from '../../protocol/schemas/analytics.js';
import type { Config } from '../../config/schema.js';
import type { AnalyticsStore } from '../../store/analytics.js';

export const DEFAULT_RANGE_DAYS = 30;
export const MAX_RANGE_DAYS = 3660;
export const DEFAULT_TOP = 10;
const DAY_MS = 86_400_000;
const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;

export interface AnalyticsDeps {
  /** absent while analytics.enabled is off */
  store?: AnalyticsStore;
  config: Pick<Config, 'analytics'>;
  now?: () => Date;
}

/** Keep one question; false when it was kept already (a redelivered event). */
export async function record(q: QuestionCompleted, deps: AnalyticsDeps): Promise<boolean> {
  if (!deps.store) return false;
  return deps.store.record(q, deps.config.analytics.store_questions);
}

/**
 * Thumbs for one answer, from whoever asked it; ok false (nothing kept) while analytics are off.
 * FORBIDDEN when the question is recorded with another owner.
 */
export async function feedback(input: FeedbackRequest, deps: AnalyticsDeps): Promise<{ ok: boolean }> {
  if (!deps.store) return { ok: false };
  const comment = input.comment?.trim();
  const kept = await deps.store.feedback({
    request_id: input.request_id, rating: input.rating, owner: input.owner, ts: (deps.now ?? (() => new Date()))(),
    ...(comment ? { comment } : {}),
    ...(input.user ? { user: input.user } : {}),
  });
  if (!kept) throw new CortadoError('FORBIDDEN', 'this answer was given to another caller: only whoever asked a question may rate its answer');
  return { ok: true };
}

/** Forget what is older than analytics.retention_days; the number of questions removed. */
export async function purge(deps: AnalyticsDeps): Promise<number> {
  if (!deps.store) return 0;
  const now = (deps.now ?? (() => new Date()))();
  const { retention_days, store_questions } = deps.config.analytics;
  return deps.store.purge(new Date(now.getTime() - retention_days * DAY_MS), store_questions, now);
}

function time(value: string, key: 'from' | 'to'): Date {
  const bare = BARE_DATE.test(value.trim());
  const d = new Date(bare ? `${value.trim()}T00:00:00Z` : value);
  if (Number.isNaN(d.getTime())) throw new CortadoError('VALIDATION_FAILED', `${key}: "${value}" is not a time (ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00:00Z)`);
  // a bare date as the end of the range includes that whole day
  return bare && key === 'to' ? new Date(d.getTime() + DAY_MS) : d;
}

/** The filter's range made explicit and checked: [from, to). */
export function range(filter: ReportFilter, now: Date): { from: Date; to: Date } {
  const to = filter.to !== undefined ? time(filter.to, 'to') : now;
  const from = filter.from !== undefined ? time(filter.from, 'from') : new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime()) throw new CortadoError('VALIDATION_FAILED', 'from must be before to');
  if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * DAY_MS) throw new CortadoError('VALIDATION_FAILED', `the range spans more than ${MAX_RANGE_DAYS} days`);
  return { from, to };
}

/** The report over the filter; while analytics are off, empty and `enabled: false`. */
export async function report(filter: ReportFilter, deps: AnalyticsDeps): Promise<AnalyticsReport> {
  const { from, to } = range(filter, (deps.now ?? (() => new Date()))());
  const store_questions = deps.config.analytics.store_questions;
  if (!deps.store) return { ...emptyReport(from, to), enabled: false, store_questions };
  const body = await deps.store.report({
    from, to, top: filter.top ?? DEFAULT_TOP, questions: store_questions,
    ...(filter.channel !== undefined ? { channel: filter.channel } : {}),
    ...(filter.widget !== undefined ? { widget: filter.widget } : {}),
    ...(filter.user !== undefined ? { user: filter.user } : {}),
  });
  return { ...body, enabled: true, store_questions };
}

function emptyReport(from: Date, to: Date): Omit<AnalyticsReport, 'enabled' | 'store_questions'> {
  return {
    range: { from: from.toISOString(), to: to.toISOString() },
    totals: { questions: 0, errors: 0, users: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, likes: 0, dislikes: 0, clarifications: 0 },
    per_day: [], steps: [], errors: [], models: [], models_per_day: [], channels: [], widgets: [], tables: [], users: [], slowest: [], disliked: [],
  };
}
