/**
 * BigQuery credentials for the executor's engine: the key from database.bigquery's
 * credentials_json or credentials_path. The loading and the auth client (which honours a
 * service account's own token_uri) live in actors/lib/warehouse/bigquery-auth.ts, shared with the ops actor.
 */

import { loadKey, type Credentials } from '../../lib/warehouse/bigquery-auth.js';

/** The key from credentials_json or credentials_path; neither: Application Default Credentials. */
export function loadCredentials(json: string, path: string): Credentials {
  return loadKey({ json, path, where: 'database.bigquery' });
}
