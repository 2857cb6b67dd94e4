/**
 * BigQuery credentials: the key from credentials_json or credentials_path (parsed here, no
 * temporary files), and the auth client for it, which sends a service account's token request
 * to the key's own token_uri.
 */

import { readFileSync } from 'node:fs';
import { GoogleAuth, gaxios, type AnyAuthClient, type JWTInput } from 'google-auth-library';
import { CortadoError } from '../../../protocol/errors.js';

const SCOPES = ['https://www.googleapis.com/auth/bigquery'];
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** A key: parsed JSON (a service account, authorized user...) or the path of a .p12/.pem file. */
export interface Credentials {
  credentials?: Record<string, unknown>;
  keyFilename?: string;
}

/** The key from credentials_json or credentials_path; neither: Application Default Credentials. */
export function loadCredentials(json: string, path: string): Credentials {
  if (json.trim() !== '') {
    try {
      return { credentials: asObject(JSON.parse(json)) };
    } catch {
      // never the content: it holds a private key
      throw new CortadoError('CONFIG_INVALID', 'database.bigquery.credentials_json is not a JSON object (paste the whole key file)');
    }
  }
  if (path.trim() === '') return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new CortadoError('CONFIG_INVALID', `database.bigquery.credentials_path cannot be read (${path}: ${code})`);
  }
  try {
    return { credentials: asObject(JSON.parse(text)) };
  } catch {
    return { keyFilename: path }; // a .p12 or .pem key: google-auth-library reads those itself
  }
}

function asObject(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
  return v as Record<string, unknown>;
}

/**
 * A transport that sends the service account's token request to its own token_uri:
 * google-auth-library's JWT client posts to Google's endpoint whatever the key says.
 */
class TokenUriTransport extends gaxios.Gaxios {
  constructor(private readonly tokenUri: string) {
    super();
  }

  override request<T = ReturnType<JSON['parse']>>(opts: gaxios.GaxiosOptions = {}): gaxios.GaxiosPromise<T> {
    const url = opts.url instanceof URL ? opts.url.href : opts.url;
    return super.request<T>(url === GOOGLE_TOKEN_URI ? { ...opts, url: this.tokenUri } : opts);
  }
}

/** The auth client for a key given as JSON (a JWT client for a service account); undefined: ADC or a key file. */
export function authFor(opts: { credentials?: Record<string, unknown> | undefined; projectId: string }): AnyAuthClient | undefined {
  const credentials = opts.credentials;
  if (!credentials) return undefined;
  const tokenUri = credentials.type === 'service_account' && typeof credentials.token_uri === 'string' ? credentials.token_uri : GOOGLE_TOKEN_URI;
  const auth = new GoogleAuth({ scopes: SCOPES, projectId: opts.projectId });
  return auth.fromJSON(credentials as JWTInput, tokenUri !== GOOGLE_TOKEN_URI ? { transporter: new TokenUriTransport(tokenUri) } : {});
}
