/**
 * Per-subject counters of what a process handled (requests served, events taken by `on` and
 * `consume`): count, errors and a latency summary over the last RECENT handlings. One line per
 * handled message is logged here too, so requests and events read the same in the logs.
 */
import type { Logger } from './log.js';
import type { CortadoError } from './errors.js';

/** handlings kept for the percentiles */
const RECENT = 512;

export type HandledKind = 'request' | 'event';

export interface ServeStats {
  subject: string;
  kind: HandledKind;
  handled: number;
  errors: number;
  totalMs: number;
  maxMs: number;
  /** over the last RECENT handlings */
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
}

export class SubjectStats {
  handled = 0;
  errors = 0;
  totalMs = 0;
  maxMs = 0;
  private readonly recent = new Float64Array(RECENT);

  constructor(readonly subject: string, readonly kind: HandledKind) {}

  add(ms: number, failed: boolean): void {
    this.recent[this.handled % RECENT] = ms;
    this.handled++;
    if (failed) this.errors++;
    this.totalMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  summary(): ServeStats {
    const sorted = Array.from(this.recent.subarray(0, Math.min(this.handled, RECENT))).sort((a, b) => a - b);
    const at = (q: number): number => (sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!) : 0);
    return {
      subject: this.subject, kind: this.kind, handled: this.handled, errors: this.errors,
      totalMs: round(this.totalMs), maxMs: round(this.maxMs), p50Ms: at(0.5), p95Ms: at(0.95), p99Ms: at(0.99),
    };
  }
}

/** The line every handled message gets: info with `code` and `ms`; 5xx-class at error. */
export function logHandled(log: Logger, line: { rid: string; subj: string; ms: number }, error?: CortadoError): void {
  const ms = round(line.ms);
  if (error) {
    if (error.httpStatus >= 500) log.error({ ...line, ms, code: error.code, err: error.cause ?? error }, error.message);
    else log.info({ ...line, ms, code: error.code }, error.message);
  } else if (log.isLevelEnabled('info')) {
    log.info({ ...line, ms, code: 'OK' }, 'handled');
  }
}

export function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
