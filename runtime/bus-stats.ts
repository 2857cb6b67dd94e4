/**
 * Per-subject counters of what a process handled (requests served, events taken by `on` and
 * `consume`): count, errors and a latency summary over the last RECENT handlings. One line per
 * handled message is logged here too (at debug), so requests and events read the same in the logs.
 */
import type { Logger } from './log.js';
import type { CortadoError } from '../protocol/errors.js';
import { busSeries, type BusSeries } from './metrics.js';

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
  /** the Prometheus series of this subject (runtime/metrics.ts); undefined while metrics are off */
  readonly series: BusSeries | undefined;

  constructor(readonly subject: string, readonly kind: HandledKind) {
    this.series = busSeries(subject, kind === 'request' ? 'server' : 'event');
  }

  /** one handling began (the in-flight gauge); every `begin` is followed by one `add` */
  begin(): void {
    this.series?.enter();
  }

  add(ms: number, failed: boolean, code?: string): void {
    this.series?.leave(ms, failed ? code ?? 'ERROR' : undefined);
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

/**
 * The line every handled message gets: debug with `code` and `ms`; 5xx-class at error. A
 * question crosses about a dozen handlers, and at the default level an operator reads one line
 * per request (the edge's access line, which carries the request id and the code): the
 * per-hop lines are there at `debug`, when following one request through the actors.
 */
export function logHandled(log: Logger, line: { rid: string; subj: string; ms: number }, error?: CortadoError): void {
  if (error && error.httpStatus >= 500) {
    log.error({ ...line, ms: round(line.ms), code: error.code, err: error.cause ?? error }, error.message);
    return;
  }
  if (!log.isLevelEnabled('debug')) return;
  if (error) log.debug({ ...line, ms: round(line.ms), code: error.code }, error.message);
  else log.debug({ ...line, ms: round(line.ms), code: 'OK' }, 'handled');
}

export function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
