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

/** API tokens (`ctd_…`) and what looks like one, wherever they sit in a URL. */
const TOKEN_LIKE = /ctd_[A-Za-z0-9_-]{4,}/i;
/**
 * Query parameters whose value is a secret, by name (compared decoded, in lower case): any name
 * holding one of these words, or one of the short ones exactly. Redacting too much costs a log
 * reader a value; too little leaks a credential.
 */
const SECRET_WORD = /token|passw|secret|api_?key|credential|authori[sz]ation|session_?id/;
const SECRET_EXACT = new Set(['key', 'pwd', 'pw', 'auth', 'sig', 'signature']);
/** decoding rounds applied when looking for a secret: double (and triple) encoding included */
const DECODE_ROUNDS = 4;
const REDACTED = '[redacted]';

/**
 * One round of form decoding, as URLSearchParams reads a query (`+` is a space, `%XX` a byte,
 * bytes as UTF-8), but never throwing: a malformed escape stays as it is.
 */
function decodeOnce(s: string): string {
  const plus = s.replace(/\+/g, ' ');
  if (!plus.includes('%')) return plus;
  return plus.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

/** `s` decoded until it stops changing (at most DECODE_ROUNDS times). */
function decoded(s: string): string {
  let cur = s;
  for (let i = 0; i < DECODE_ROUNDS; i++) {
    const next = decodeOnce(cur);
    if (next === cur) break;
    cur = next;
  }
  return cur;
}

function secretName(rawName: string): boolean {
  const name = decoded(rawName).trim().toLowerCase().replace(/\[\]$/, '');
  return SECRET_WORD.test(name) || SECRET_EXACT.has(name);
}

function tokenLike(raw: string): boolean {
  return TOKEN_LIKE.test(raw) || TOKEN_LIKE.test(decoded(raw));
}

/**
 * A URL as it may be logged: the value of every query parameter whose name, once decoded the
 * way the query is parsed (`%74oken`, `%54OKEN`, `+`, double encoding), names a secret, and
 * anything that looks like an API token (`ctd_…`, encoded or not) in any parameter or path
 * segment, replaced by `[redacted]`. `&` and `;` both separate parameters here, and every
 * repeated key is redacted.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = /ctd|%/i.test(path) ? path.split('/').map((seg) => (tokenLike(seg) ? REDACTED : seg)).join('/') : path;
  if (q < 0) return safePath;
  const query = url.slice(q + 1).split(/([&;])/).map((part, i) => {
    if (i % 2 === 1 || part === '') return part; // a separator
    const eq = part.indexOf('=');
    const name = eq < 0 ? part : part.slice(0, eq);
    if (eq < 0) return tokenLike(name) || secretName(name) ? REDACTED : part;
    return secretName(name) || tokenLike(part) ? `${tokenLike(name) ? REDACTED : name}=${REDACTED}` : part;
  });
  return `${safePath}?${query.join('')}`;
}
