/** mysql2's errors mapped to Cortado's: error numbers, SQLSTATEs and client failures → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED. */

import { CortadoError } from '../../../protocol/errors.js';
import { networkReason, timedOut, unavailable } from './errors.js';

/** Server errors that mean the query was stopped: its timeout (3024 MySQL, 1969 MariaDB) or KILL QUERY (1317). */
const TIMEOUT_ERRNOS = new Set([3024, 1969, 1317]);

/** Server errors that mean the database is out of reach or refuses the login. */
const UNAVAILABLE_ERRNOS: Record<number, string> = {
  1040: 'the server has too many connections',
  1044: 'the account may not use that database',
  1045: 'the login was refused',
  1049: 'the database does not exist',
  1053: 'the server is shutting down',
  1129: 'the host is blocked by the server',
  1130: 'the host may not connect to the server',
  1203: 'the account has too many connections',
  1226: 'the account ran out of a resource limit',
  1251: 'the server wants an authentication method the client does not offer',
  1698: 'the login was refused',
  1927: 'the connection was killed',
  3159: 'the server requires a secure transport',
};

/** mysql2's own client codes beyond Node's network ones. */
const MYSQL_CODES: Readonly<Record<string, string>> = {
  ENOENT: 'no server at that socket',
  PROTOCOL_CONNECTION_LOST: 'the connection was closed',
  ER_SERVER_GONE_ERROR: 'the connection was closed',
  ER_SERVER_LOST: 'the connection was closed',
  POOL_CLOSED: 'the executor is stopping',
  HANDSHAKE_NO_SSL_SUPPORT: 'the TLS connection failed',
  HANDSHAKE_SSL_ERROR: 'the TLS connection failed',
};

/** The reason a client-side failure means the database is out of reach, or undefined. */
function clientUnavailable(code: string, message: string): string | undefined {
  const network = networkReason(code, MYSQL_CODES);
  if (network) return network;
  if (/connect ETIMEDOUT|connection timeout|timeout.*connect/i.test(message)) return 'no connection could be opened in time';
  if (/closed state|connection lost|Can't add new command when connection is in closed state/i.test(message)) return 'the connection was closed';
  return undefined;
}

/** mysql2's errors → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED (or INTERNAL for what is none of those). */
export function toDbError(err: unknown, timeoutMs?: number): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; sqlState?: unknown; sqlMessage?: unknown; message?: unknown; fatal?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const errno = typeof e.errno === 'number' ? e.errno : undefined;
  const message = typeof e.sqlMessage === 'string' && e.sqlMessage ? e.sqlMessage : typeof e.message === 'string' ? e.message : String(err);
  const sqlstate = typeof e.sqlState === 'string' ? e.sqlState : undefined;
  // a server error: an error number and an SQLSTATE (mysql2 names only the codes it knows:
  // MariaDB's own, like 1969, come without `code`); system errors have neither
  if (errno !== undefined && errno > 0 && sqlstate !== undefined) {
    if (TIMEOUT_ERRNOS.has(errno) || (/interrupted/i.test(message) && timeoutMs !== undefined)) {
      return timeoutMs !== undefined ? timedOut(timeoutMs) : new CortadoError('DB_TIMEOUT', 'the query was cancelled', { errno });
    }
    // SQLSTATE class 28: invalid authorization (1045, 1698...); 08: connection exception
    const why = UNAVAILABLE_ERRNOS[errno] ?? (sqlstate.startsWith('28') ? 'the login was refused' : sqlstate.startsWith('08') ? 'the connection failed' : undefined);
    if (why) return unavailable(why, { errno, ...(code ? { code } : {}) }, err);
    const details: Record<string, unknown> = { errno, sqlstate };
    if (code) details.code = code;
    return new CortadoError('DB_QUERY_FAILED', message, details, { cause: err });
  }
  const why = clientUnavailable(code, message);
  if (why) return unavailable(why, code ? { reason: code } : {}, err);
  if (e.fatal === true) return unavailable('the connection failed', code ? { reason: code } : {}, err);
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}
