/**
 * Gemini models on Vertex AI through @google/genai: project, location and Google Cloud
 * credentials instead of an API key; the wire translation is gemini.ts's.
 *
 * Credentials go to the SDK as googleAuthOptions, in this order:
 *   credentials_json  the service-account (or other credential) JSON itself → {credentials}
 *   credentials_path  a file holding it → {keyFile}
 *   neither           Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, gcloud's
 *                     user credentials, or the metadata server on Google Cloud
 * Nothing is written to disk and the process environment is never changed.
 *
 * A service account's `token_uri` is honoured: google-auth-library always posts the signed
 * assertion to https://oauth2.googleapis.com/token, so the auth transport sends requests for
 * that URL to the credentials' token_uri instead when it names another endpoint (a private
 * endpoint, or a test's local server).
 */
import { readFileSync } from 'node:fs';
import { GoogleGenAI, type GoogleGenAIOptions } from '@google/genai';
import { gaxios } from 'google-auth-library';
import type { Config } from '../../../config/schema.js';
import { LlmAttemptError, type Completion, type CompletionRequest, type LlmProvider } from './provider.js';
import { generate, geminiHttpOptions } from './gemini.js';

type Section = Config['llm']['vertexai'];

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

export function createVertexProvider(section: Section): LlmProvider {
  const setup = prepare(section);
  return {
    name: 'vertexai',
    status: () => ('client' in setup ? { configured: true } : { configured: false, reason: setup.reason }),
    async complete(req: CompletionRequest): Promise<Completion> {
      if (!('client' in setup)) throw new LlmAttemptError(`the Vertex AI provider is not configured: ${setup.reason}`, { retryable: false });
      return generate(setup.client, req);
    },
  };
}

function prepare(section: Section): { client: GoogleGenAI } | { reason: string } {
  if (!section.project_id) return { reason: 'no project: set llm.vertexai.project_id' };
  const creds = credentials(section);
  if ('reason' in creds) return creds;
  try {
    const googleAuthOptions: NonNullable<GoogleGenAIOptions['googleAuthOptions']> = {
      ...(creds.source === 'json' ? { credentials: creds.json } : creds.source === 'file' ? { keyFile: section.credentials_path } : {}),
      clientOptions: { transporter: authTransport(section.timeout * 1000, creds.json) },
    };
    const client = new GoogleGenAI({
      vertexai: true,
      project: section.project_id,
      ...(section.location ? { location: section.location } : {}),
      googleAuthOptions,
      httpOptions: geminiHttpOptions(section),
    });
    return { client };
  } catch (err) {
    return { reason: `the Vertex AI client could not be set up: ${(err as Error).message}` };
  }
}

type Creds = { source: 'json' | 'file'; json: Record<string, unknown> } | { source: 'adc'; json?: undefined } | { reason: string };

/** The credentials named in the config, parsed here so that a mistake shows in the status. */
function credentials(section: Section): Creds {
  if (section.credentials_json.trim()) {
    const json = parseObject(section.credentials_json);
    // never echo the text: it holds a private key
    return json ? { source: 'json', json } : { reason: 'llm.vertexai.credentials_json is not a JSON object' };
  }
  if (section.credentials_path) {
    let text: string;
    try {
      text = readFileSync(section.credentials_path, 'utf8');
    } catch (err) {
      return { reason: `cannot read llm.vertexai.credentials_path ${section.credentials_path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` };
    }
    const json = parseObject(text);
    return json ? { source: 'file', json } : { reason: `llm.vertexai.credentials_path ${section.credentials_path} does not hold a JSON object` };
  }
  return { source: 'adc' };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The HTTP transport of the auth library: bounded by the call timeout, without retries of its
 * own (the token request would otherwise be tried 4 times inside one attempt), posting to the
 * credentials' token_uri.
 */
function authTransport(timeoutMs: number, json: Record<string, unknown> | undefined): InstanceType<typeof gaxios.Gaxios> {
  const transporter = new gaxios.Gaxios({ timeout: timeoutMs, retryConfig: { retry: 0 } });
  const tokenUri = typeof json?.token_uri === 'string' ? json.token_uri : '';
  if (tokenUri && tokenUri !== GOOGLE_TOKEN_URL) {
    const target = new URL(tokenUri);
    transporter.interceptors.request.add({
      resolved: async (opts) => {
        if (String(opts.url) === GOOGLE_TOKEN_URL) opts.url = new URL(target);
        return opts;
      },
    });
  }
  return transporter;
}
