/**
 * BigQuery sign-in, shared by the executor's engine and the ops actor: the key from pasted JSON
 * or a file (parsed here, no temporary files), and the auth client for it, which sends a service
 * account's token request to the key's own token_uri (google-auth-library's JWT client posts to
 * Google's endpoint whatever the key says; a key with another token_uri, as in a private
 * deployment or a test stand-in, would otherwise never be honoured).
 *
 * Errors name the configuration key (`where`), never the key's content: it holds a private key.
 */
import { readFileSync } from 'node:fs';
import { GoogleAuth, gaxios, type AnyAuthClient, type JWTInput } from 'google-auth-library';
import { CortadoError } from '../../../protocol/errors.js';

const SCOPES = ['https://www.googleapis.com/auth/bigquery'];
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

/** A key: parsed JSON (a service account, authorized user...) or the path of a .p12/.pem file. */
export interface Credentials {
  credentials?: Record<string, unknown>;
  keyFilename?: string;
}

export interface KeySource {
  /** pasted key JSON ('' for none) */
  json?: string;
  /** a key file ('' for none) */
  path: string;
  /** the configuration key the two come from, for errors: `database.bigquery` */
  where: string;
}

/** The key from the JSON or else the file; neither: {} (Application Default Credentials). */
export function loadKey(src: KeySource): Credentials {
  const json = src.json ?? '';
  if (json.trim() !== '') {
    try {
      return { credentials: asObject(JSON.parse(json)) };
    } catch {
      throw new CortadoError('CONFIG_INVALID', `${src.where}.credentials_json is not a JSON object (paste the whole key file)`);
    }
  }
  if (src.path.trim() === '') return {};
  let text: string;
  try {
    text = readFileSync(src.path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new CortadoError('CONFIG_INVALID', `${src.where}.credentials_path cannot be read (${src.path}: ${code})`);
  }
  try {
    return { credentials: asObject(JSON.parse(text)) };
  } catch {
    return { keyFilename: src.path }; // a .p12 or .pem key: google-auth-library reads those itself
  }
}

function asObject(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
  return v as Record<string, unknown>;
}

/** Sends the token request to `tokenUri` instead of Google's endpoint. */
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

/** The client options for a key: an auth client, a key file, or nothing (ADC). */
export function clientAuth(creds: Credentials, projectId: string): { authClient?: AnyAuthClient; keyFilename?: string } {
  const authClient = authFor({ credentials: creds.credentials, projectId });
  if (authClient) return { authClient };
  return creds.keyFilename ? { keyFilename: creds.keyFilename } : {};
}
