/**
 * One JSON line per event (pino). Base fields: svc; children add rid (request id) and subj.
 * Secrets are redacted by path; result rows are never logged (callers log counts).
 */
import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

const REDACT = [
  'password', '*.password', '*.*.password',
  'api_key', '*.api_key', '*.*.api_key',
  'apiKey', '*.apiKey',
  'token', '*.token', 'api_token', '*.api_token',
  'secret', '*.secret', 'bind_password', '*.bind_password',
  'credentials_json', '*.credentials_json', '*.*.credentials_json',
  'encryption_key', '*.encryption_key',
  'authorization', '*.authorization', 'headers.authorization', 'headers["x-mcp-token"]', 'headers.cookie',
  'cookie', '*.cookie',
];

export interface LogOptions {
  svc: string;
  level?: string;
  /** write somewhere other than stdout (tests) */
  destination?: NodeJS.WritableStream;
}

export function createLogger(opts: LogOptions): Logger {
  // CORTADO_LOG_LEVEL overrides the configured level of the process's own log; a logger written
  // to an explicit destination (a test capturing lines) keeps the level it asked for.
  const env = opts.destination ? undefined : process.env.CORTADO_LOG_LEVEL;
  const level = (env ?? opts.level ?? 'info').toLowerCase();
  return pino(
    {
      base: { svc: opts.svc },
      level: level === 'warning' ? 'warn' : level,
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? pino.destination({ fd: 1, sync: false }),
  );
}

/** Replace the value of secret-bearing query parameters in a URL before it is logged. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:token|api_key|apikey|key|password|access_token)=)[^&#]*/gi, '$1[redacted]');
}
