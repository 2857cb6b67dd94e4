/**
 * Bounded results, read from the wire: query.max_result_mb and query.max_value_kb, enforced
 * while a result arrives, before the driver builds it.
 *
 * - PostgreSQL and MySQL/MariaDB: a meter sits in front of the driver's parser on the
 *   connection's socket (pg-wire-meter.ts, mysql-wire-meter.ts). It reads only the message
 *   headers and each value's length prefix, counts, and when a value or the result goes over
 *   its cap it hands the driver nothing more (not even the start of the offending message),
 *   destroys the socket and the engine answers RESULT_TOO_LARGE. The driver never asks for
 *   the big allocation: a 600 MB value costs nothing here (it used to end the process).
 * - Trino and BigQuery read JSON pages over HTTP: each page's body is stopped at the bytes the
 *   result has left (PageBudget), before it is parsed; values are checked once the page is.
 *
 * Our own catalog queries (introspection, type names) run under INTERNAL_CAPS: a catalog is
 * never that large, and a value under these caps can never make a driver throw inside its
 * socket handler (V8's longest string is about 512 M characters).
 */
import { CortadoError } from '../../../protocol/errors.js';

export interface WireCaps {
  /** the result's bytes as read from the wire, at most */
  maxResultBytes: number;
  /** one value's bytes, at most */
  maxValueBytes: number;
}

const KB = 1024;
const MB = 1024 * 1024;

/** query.max_result_mb and query.max_value_kb's defaults (config/schema.ts), for callers that pass none. */
const DEFAULT_CAPS: WireCaps = { maxResultBytes: 32 * MB, maxValueBytes: 1024 * KB };

/** Cortado's own queries: the largest the settings allow. */
export const INTERNAL_CAPS: WireCaps = { maxResultBytes: 1024 * MB, maxValueBytes: 256 * MB };

/** A database message that is no row (an error, a notice) may be this much over max_value: its text quotes values. */
export const MESSAGE_SLACK_BYTES = 64 * KB;

/** An HTTP page may be this much over what the result has left: its columns, stats, ids. */
export const PAGE_SLACK_BYTES = 64 * KB;

/** The caps of config.query (the defaults where a setting is missing). */
export function capsFromConfig(query: { max_result_mb?: number; max_value_kb?: number }): WireCaps {
  const mb = query.max_result_mb;
  const kb = query.max_value_kb;
  return {
    maxResultBytes: typeof mb === 'number' && mb > 0 ? mb * MB : DEFAULT_CAPS.maxResultBytes,
    maxValueBytes: typeof kb === 'number' && kb > 0 ? kb * KB : DEFAULT_CAPS.maxValueBytes,
  };
}

/** The caps an engine applies: what the caller asked for, else the defaults. */
export function capsOf(opts: { maxResultBytes?: number | undefined; maxValueBytes?: number | undefined }): WireCaps {
  return {
    maxResultBytes: opts.maxResultBytes ?? DEFAULT_CAPS.maxResultBytes,
    maxValueBytes: opts.maxValueBytes ?? DEFAULT_CAPS.maxValueBytes,
  };
}

function size(bytes: number, unit: number, name: string): string {
  const n = bytes / unit;
  return Number.isInteger(n) ? `${n} ${name}` : `${bytes} bytes`;
}

export type TooLargeKind = 'value' | 'result' | 'message';

/** RESULT_TOO_LARGE, naming the cap and the setting that sets it. */
export function tooLarge(kind: TooLargeKind, caps: WireCaps): CortadoError {
  if (kind === 'result') {
    return new CortadoError(
      'RESULT_TOO_LARGE',
      `the result is larger than ${size(caps.maxResultBytes, MB, 'MB')} (query.max_result_mb): the read was stopped and nothing is returned; ask for fewer rows or columns, or raise query.max_result_mb`,
      { setting: 'query.max_result_mb', limit_bytes: caps.maxResultBytes },
    );
  }
  const what = kind === 'value' ? 'a value in the result' : 'a message from the database';
  return new CortadoError(
    'RESULT_TOO_LARGE',
    `${what} is larger than ${size(caps.maxValueBytes, KB, 'KB')} (query.max_value_kb): the read was stopped and nothing is returned; select a shorter expression (an aggregate packing many rows into one value is one), or raise query.max_value_kb`,
    { setting: 'query.max_value_kb', limit_bytes: caps.maxValueBytes },
  );
}

// ---- in front of a driver's socket ------------------------------------------------------------

/** A meter of the bytes a database sends: how many of this chunk the driver may have. */
export interface WireMeter {
  /** set once the read must stop; the error the caller answers with */
  readonly tripped: CortadoError | undefined;
  /** the first `n` bytes of the chunk go on to the driver (all of it while nothing is wrong) */
  feed(chunk: Buffer): number;
}

/**
 * Put `meter` in front of the 'data' listeners a driver has on its socket: each chunk goes to
 * the meter first, and the driver gets only what the meter lets through. When the meter trips,
 * the socket is destroyed with the meter's error (the driver fails its query with it) and
 * nothing more reaches the driver. Call it once the driver has its final stream (after TLS).
 */
export function meterSocket(stream: NodeJS.EventEmitter & { destroy(err?: Error): unknown; destroyed?: boolean }, meter: WireMeter): void {
  const driver = stream.listeners('data') as Array<(chunk: Buffer) => void>;
  stream.removeAllListeners('data');
  stream.on('data', (chunk: Buffer) => {
    if (meter.tripped) return;
    const n = meter.feed(chunk);
    const pass = n >= chunk.length ? chunk : chunk.subarray(0, n);
    if (pass.length > 0) for (const listener of driver) listener.call(stream, pass);
    if (meter.tripped && !stream.destroyed) stream.destroy(meter.tripped);
  });
}

/**
 * Puts `meter` in front of a driver's parser on its socket, when the driver lets us reach one
 * that can carry it (its 'data' listeners movable, the socket destroyable); false when not, and
 * nothing is changed: the caller warns that the caps cannot be enforced while rows are read.
 */
export function attachMeter(stream: unknown, meter: WireMeter): boolean {
  const s = stream as Parameters<typeof meterSocket>[0] | undefined;
  if (!s || typeof s.listeners !== 'function' || typeof s.destroy !== 'function') return false;
  meterSocket(s, meter);
  return true;
}

// ---- HTTP pages (Trino, BigQuery) ---------------------------------------------------------

/**
 * The bytes a result has left, across its pages. A page may be as large as what is left; past
 * that its read is stopped (axios' maxContentLength, or our own stream read) before parsing.
 */
export class PageBudget {
  readonly caps: WireCaps;
  private used = 0;
  /** set when a page or a value was over its cap */
  exceeded: CortadoError | undefined;

  constructor(caps: WireCaps) {
    this.caps = caps;
  }

  /** How many bytes the next page may have. */
  get left(): number {
    return Math.max(0, this.caps.maxResultBytes - this.used);
  }

  /** Count a page read in full; false (and `exceeded` set) when the result is now over its cap. */
  add(bytes: number): boolean {
    this.used += bytes;
    if (this.used > this.caps.maxResultBytes) this.exceeded ??= tooLarge('result', this.caps);
    return this.exceeded === undefined;
  }

  /** The page was stopped for being over what is left. */
  pageStopped(): CortadoError {
    this.exceeded ??= tooLarge('result', this.caps);
    return this.exceeded;
  }

  /** Check the values of parsed rows; false (and `exceeded` set) when one is over max_value. */
  checkValues(rows: readonly unknown[]): boolean {
    for (const row of rows) {
      if (valueBytes(row, this.caps.maxValueBytes, true) > this.caps.maxValueBytes) {
        this.exceeded ??= tooLarge('value', this.caps);
        return false;
      }
    }
    return true;
  }
}

/**
 * The size of a parsed JSON value in bytes, about (string length, 8 per number): stops counting
 * past `limit`. `cells`: the value is a row, whose items are each a value of their own.
 */
export function valueBytes(v: unknown, limit: number, cells = false): number {
  if (typeof v === 'string') return v.length;
  if (v === null || typeof v !== 'object') return 8;
  if (Array.isArray(v)) {
    let total = 0;
    for (const item of v) {
      const n = valueBytes(item, limit);
      if (cells) {
        if (n > limit) return n;
      } else {
        total += n + 1;
        if (total > limit) return total;
      }
    }
    return total;
  }
  let total = 0;
  for (const [key, item] of Object.entries(v as Record<string, unknown>)) {
    total += key.length + valueBytes(item, limit) + 2;
    if (total > limit) return total;
  }
  return total;
}
