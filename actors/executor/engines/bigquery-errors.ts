/** The BigQuery SDK's and google-auth-library's errors mapped to Cortado's: DB_QUERY_FAILED, DB_TIMEOUT, DB_UNAVAILABLE. */

import { gaxios } from 'google-auth-library';
import { CortadoError } from '../../../protocol/errors.js';
import { networkReason, unavailable } from './errors.js';

/** TLS failures the SDK reports by code, beyond Node's network ones. */
const TLS_CODES: Readonly<Record<string, string>> = {
  CERT_HAS_EXPIRED: 'the TLS connection failed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the TLS connection failed',
};

/**
 * The SDK's errors → DB_QUERY_FAILED (BigQuery refused the SQL: 400 invalidQuery and the
 * like, 404 for a table or dataset that is not there), DB_TIMEOUT (a job stopped), and
 * DB_UNAVAILABLE (login refused, access denied, quota, 5xx, the network), else INTERNAL.
 */
export function toDbError(err: unknown): CortadoError {
  if (err instanceof CortadoError) return err;
  const e = (err ?? {}) as { code?: unknown; status?: unknown; errors?: Array<{ reason?: string; message?: string }>; message?: unknown; response?: { data?: { error?: unknown; error_description?: unknown } } };
  const message = typeof e.message === 'string' ? e.message : String(err);

  // google-auth-library (the token endpoint, the metadata server): the API calls themselves do not use gaxios
  if (err instanceof gaxios.GaxiosError) {
    const network = typeof e.code === 'string' ? networkReason(e.code, TLS_CODES) : undefined;
    if (network) return unavailable(`the token endpoint cannot be reached (${network})`, { reason: e.code }, err);
    const grant = typeof e.response?.data?.error === 'string' ? e.response.data.error : undefined;
    return unavailable(`the login was refused${grant ? ` (${grant})` : ''}`, grant ? { reason: grant } : {}, err);
  }
  if (/could not load the default credentials/i.test(message)) {
    return unavailable('no credentials: set database.bigquery.credentials_path or credentials_json, or provide Application Default Credentials', {}, err);
  }

  const status = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : undefined;
  const first = e.errors?.[0];
  const reason = first?.reason ?? '';
  const said = first?.message ?? message;
  if (status !== undefined) {
    const details = { status, ...(reason ? { reason } : {}) };
    if (status === 400 || status === 404) {
      if (reason === 'stopped') return new CortadoError('DB_TIMEOUT', 'the query was cancelled', details, { cause: err });
      return new CortadoError('DB_QUERY_FAILED', said, details, { cause: err });
    }
    if (status === 401) return unavailable('the login was refused (invalid or expired credentials)', details, err);
    if (status === 403) {
      if (/quota|rateLimit/i.test(reason)) return unavailable(`quota or rate limit exceeded: ${said}`, details, err);
      return unavailable(`access denied: ${said}`, details, err);
    }
    if (status === 429) return unavailable(`rate limited: ${said}`, details, err);
    if (status >= 500) return unavailable(`BigQuery failed (HTTP ${status}${reason ? ` ${reason}` : ''})`, details, err);
  }
  const code = typeof e.code === 'string' ? e.code : '';
  const network = networkReason(code, TLS_CODES) ?? (/ECONNREFUSED|ENOTFOUND|ECONNRESET|socket hang up|network/i.test(message) ? 'the network failed' : undefined);
  if (network) return unavailable(network, code ? { reason: code } : {}, err);
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}
