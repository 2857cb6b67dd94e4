/** pg's errors mapped to Cortado's: SQLSTATEs and client failures → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED. */

import { CortadoError } from '../../../protocol/errors.js';
import { networkReason, timedOut, unavailable } from './errors.js';

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The reason a server error means the database is out of reach, or undefined. */
function serverUnavailable(sqlstate: string): string | undefined {
  if (sqlstate.startsWith('28')) return 'the login was refused';
  if (sqlstate === '3D000') return 'the database does not exist';
  if (sqlstate.startsWith('08')) return 'the connection failed';
  if (sqlstate.startsWith('53')) return 'the server is out of resources';
  if (sqlstate === '57P01' || sqlstate === '57P02' || sqlstate === '57P03') return 'the server is shutting down or starting up';
  return undefined;
}

/** pg's own client codes beyond Node's network ones. */
const PG_CODES: Readonly<Record<string, string>> = { ENOENT: 'no server at that socket' };

/** The reason a client-side failure means the database is out of reach, or undefined. */
function clientUnavailable(code: string, message: string): string | undefined {
  const network = networkReason(code, PG_CODES);
  if (network) return network;
  if (/timeout exceeded when trying to connect|connection timeout/i.test(message)) return 'no connection could be opened in time';
  if (/terminated|not queryable|connection error/i.test(message)) return 'the connection was closed';
  if (/ssl|tls|certificate/i.test(message)) return 'the TLS connection failed';
  if (/password|sasl|scram/i.test(message)) return 'the login was refused';
  return undefined;
}

/** pg's errors → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED (or INTERNAL for what is none of those). */
export function toDbError(err: unknown, timeoutMs?: number): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; message?: unknown; hint?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  if (SQLSTATE.test(code)) {
    if (code === '57014') {
      return timeoutMs !== undefined ? timedOut(timeoutMs) : new CortadoError('DB_TIMEOUT', 'the query was cancelled', { sqlstate: code });
    }
    const why = serverUnavailable(code);
    if (why) return unavailable(why, { sqlstate: code }, err);
    const details: Record<string, unknown> = { sqlstate: code };
    if (typeof e.hint === 'string' && e.hint) details.hint = e.hint;
    return new CortadoError('DB_QUERY_FAILED', message, details, { cause: err });
  }
  const why = clientUnavailable(code, message);
  if (why) return unavailable(why, code ? { reason: code } : {}, err);
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}
