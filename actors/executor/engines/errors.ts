/**
 * The errors every engine shares: a query that ran past its timeout (DB_TIMEOUT), a database
 * out of reach (DB_UNAVAILABLE), and the network failures that mean the latter. Each engine
 * maps its own driver's errors (its SQLSTATEs, error numbers, HTTP statuses) and calls these,
 * so the messages read the same whatever the database.
 */

import { CortadoError } from '../../../protocol/errors.js';

/** `30 s` for whole seconds, else `1500 ms`. */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** The query ran past the timeout Cortado gave it and was cancelled. */
export function timedOut(timeoutMs: number): CortadoError {
  return new CortadoError('DB_TIMEOUT', `the query ran past its timeout of ${seconds(timeoutMs)} and was cancelled`, { timeout_ms: timeoutMs });
}

/** The database cannot be reached, and why (said for people: "connection refused"). */
export function unavailable(why: string, details: Record<string, unknown>, cause: unknown): CortadoError {
  return new CortadoError('DB_UNAVAILABLE', `the database cannot be reached: ${why}`, details, { cause });
}

/** Node's socket and DNS error codes that mean the server is out of reach, and why. */
const NETWORK: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'unknown host',
  ECONNRESET: 'the connection was closed',
  EPIPE: 'the connection was closed',
  ETIMEDOUT: 'the host does not answer',
  EHOSTUNREACH: 'the host does not answer',
  ENETUNREACH: 'the host does not answer',
};

/**
 * Why a failure with this error code means the server is out of reach, or undefined: the
 * driver's own codes (`extra`) first, then Node's network codes.
 */
export function networkReason(code: string, extra: Readonly<Record<string, string>> = {}): string | undefined {
  if (!code) return undefined;
  return Object.hasOwn(extra, code) ? extra[code] : Object.hasOwn(NETWORK, code) ? NETWORK[code] : undefined;
}

/** Whether a connection whose query failed this way must be dropped rather than reset and reused. */
export function dropsConnection(e: CortadoError): boolean {
  return e.code === 'DB_UNAVAILABLE' || e.code === 'INTERNAL' || e.code === 'RESULT_TOO_LARGE';
}
