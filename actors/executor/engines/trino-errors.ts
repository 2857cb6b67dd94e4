/** trino-client's failures mapped to Cortado's: Trino error names, HTTP statuses and network failures → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED. */

import type { QueryError } from 'trino-client';
import { CortadoError } from '../../../protocol/errors.js';
import { networkReason, timedOut, unavailable } from './errors.js';

/** A failed Trino query, as the coordinator described it. */
export class TrinoQueryError extends Error {
  readonly error: QueryError;
  constructor(error: QueryError) {
    super(error.message);
    this.error = error;
  }
}

/** Cancelled on the coordinator, by someone or something other than a time limit. */
const CANCELLED = new Set(['USER_CANCELED', 'ADMINISTRATIVELY_KILLED', 'ADMINISTRATIVELY_PREEMPTED']);

/** The cluster, not the SQL: starting, stopping, overloaded, losing workers. */
const CLUSTER_TROUBLE = new Set([
  'NO_NODES_AVAILABLE', 'SERVER_STARTING_UP', 'SERVER_SHUTTING_DOWN', 'REMOTE_TASK_ERROR', 'REMOTE_TASK_MISMATCH',
  'REMOTE_HOST_GONE', 'REMOTE_TASK_FAILED', 'TOO_MANY_REQUESTS_FAILED', 'PAGE_TRANSPORT_ERROR', 'PAGE_TRANSPORT_TIMEOUT',
  'PAGE_TRANSFER_ERROR', 'ABANDONED_QUERY', 'QUERY_QUEUE_FULL', 'CLUSTER_OUT_OF_MEMORY', 'QUERY_REJECTED',
  'CATALOG_UNAVAILABLE', 'OUT_OF_SPILL_SPACE',
]);

/** Trino's error object → DB_TIMEOUT, DB_UNAVAILABLE or DB_QUERY_FAILED. */
function queryError(e: QueryError, timeoutMs: number | undefined, cause: unknown): CortadoError {
  const name = String(e.errorName ?? '');
  const type = String(e.errorType ?? '');
  const details = { error_name: name, error_type: type, error_code: e.errorCode };
  if (name === 'EXCEEDED_TIME_LIMIT') {
    return timeoutMs !== undefined ? timedOut(timeoutMs) : new CortadoError('DB_TIMEOUT', 'the query ran past Trino\'s time limit and was cancelled', details);
  }
  if (CANCELLED.has(name)) return new CortadoError('DB_TIMEOUT', 'the query was cancelled on the coordinator', details, { cause });
  if (CLUSTER_TROUBLE.has(name)) return unavailable(`Trino cannot run queries now (${name})`, details, cause);
  if (type === 'INSUFFICIENT_RESOURCES' && !name.startsWith('EXCEEDED_')) return unavailable(`Trino is out of resources (${name})`, details, cause);
  if (type === 'EXTERNAL' && (/METASTORE|CONNECT|UNAVAILABLE/.test(name) || /connection refused|could not connect|connect timed out/i.test(e.message ?? ''))) {
    return unavailable(`a data source behind Trino does not answer (${name})`, details, cause);
  }
  // The SQL, the data or its size (EXCEEDED_*_LIMIT): Trino's message helps correct it.
  return new CortadoError('DB_QUERY_FAILED', e.message || name || 'Trino failed the query', details, { cause });
}

/** trino-client's (axios's) own codes beyond Node's network ones. */
const TRINO_CODES: Readonly<Record<string, string>> = {
  ERR_SOCKET_CLOSED: 'the connection was closed',
  ECONNABORTED: 'the host does not answer',
};

/** Why a request that got no answer failed, or undefined. */
function requestFailure(code: string, message: string): string | undefined {
  const network = networkReason(code, TRINO_CODES);
  if (network) return network;
  if (/cert|ssl|tls|EPROTO/i.test(`${code} ${message}`)) return 'the TLS connection failed';
  return undefined;
}

/** The first line of an HTTP error body, short: Trino says there why it refused. */
function bodyText(data: unknown): string {
  const text = typeof data === 'string' ? data : data && typeof data === 'object' ? JSON.stringify(data) : '';
  return (text.split('\n')[0] ?? '').trim().slice(0, 200);
}

/** trino-client's failures → DB_UNAVAILABLE, DB_TIMEOUT, DB_QUERY_FAILED (or INTERNAL). */
export function toTrinoError(err: unknown, timeoutMs?: number): CortadoError {
  if (err instanceof CortadoError) return err;
  if (err instanceof TrinoQueryError) return queryError(err.error, timeoutMs, err);
  const e = (err ?? {}) as { isAxiosError?: boolean; code?: unknown; message?: unknown; response?: { status?: number; data?: unknown } };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  const status = e.response?.status;
  if (typeof status === 'number') {
    const details = { http_status: status };
    if (status === 401) return unavailable('the login was refused', details, err);
    if (status === 403) return unavailable(`access was refused${bodyText(e.response?.data) ? `: ${bodyText(e.response?.data)}` : ''}`, details, err);
    if (status === 404) return unavailable('the coordinator does not know the query (or this is not a Trino server)', details, err);
    if (status >= 500 || status === 429) return unavailable(`the coordinator answered HTTP ${status}`, details, err);
    return new CortadoError('DB_QUERY_FAILED', `Trino refused the request (HTTP ${status})${bodyText(e.response?.data) ? `: ${bodyText(e.response?.data)}` : ''}`, details, { cause: err });
  }
  const why = requestFailure(code, message);
  if (why) return unavailable(why, code ? { reason: code } : {}, err);
  if (e.isAxiosError) return unavailable('the request failed', code ? { reason: code } : {}, err);
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}
