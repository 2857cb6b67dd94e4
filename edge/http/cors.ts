/**
 * CORS from the `cors` section, read on every request (the admin panel may change it at run time).
 *
 * - An Origin listed in `allow_origins` (exact, case-insensitive, a trailing `/` ignored) is
 *   echoed back with `Vary: Origin`, and with `Access-Control-Allow-Credentials: true` when
 *   `allow_credentials` is on.
 * - Otherwise, `*` in the list answers `Access-Control-Allow-Origin: *` and NEVER credentials:
 *   a wildcard origin does not go out together with credentials (browsers refuse the pair, and
 *   allowing every site to send the user's cookies would be worse). List the origins that need
 *   cookies explicitly, next to `*` if other sites may still call without them.
 * - Any other Origin gets no CORS headers at all (only `Vary: Origin`), so its browser blocks it.
 *   The string `null` (sandboxed frames, files) never matches an entry: only `*` covers it.
 * - Preflight (OPTIONS with Access-Control-Request-Method, answered 204 by app.ts before any
 *   route or rate limit): `Access-Control-Allow-Methods` from `allow_methods` (`*`: every method
 *   Cortado serves), `Access-Control-Allow-Headers` from `allow_headers` (`*`: the headers the
 *   browser asked for, which also covers `Authorization`, unlike a literal `*`), and
 *   `Access-Control-Max-Age: 600`.
 * - Actual responses expose `x-request-id`, `Retry-After` and the `RateLimit-*` headers to
 *   scripts.
 */
import type { Logger } from '../../runtime/log.js';
import type { Config } from '../../config/schema.js';

export interface CorsPolicy {
  /** headers for the response to an ordinary request carrying this Origin */
  response(origin: string | undefined): Record<string, string>;
  /** headers for the 204 answer to a preflight */
  preflight(origin: string | undefined, requestHeaders: string | undefined): Record<string, string>;
  /** whether pages of this Origin may call Cortado at all (listed, or `*`; `null` only under `*`) */
  allows(origin: string): boolean;
}

const ALL_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const EXPOSED = 'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, ratelimit-policy, traceparent';
const MAX_AGE_S = '600';
/** a comma-separated list of header names (RFC 9110 tokens), nothing else is reflected */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

interface Compiled {
  explicit: Set<string>;
  any: boolean;
  credentials: boolean;
  methods: string;
  /** undefined: reflect what the preflight asks for */
  headers: string | undefined;
}

function normaliseOrigin(o: string): string {
  return o.trim().replace(/\/+$/, '').toLowerCase();
}

function compile(cors: Config['cors'], log: Logger | undefined): Compiled {
  const explicit = new Set(cors.allow_origins.filter((o) => o.trim() !== '*').map(normaliseOrigin).filter((o) => o !== '' && o !== 'null'));
  const any = cors.allow_origins.some((o) => o.trim() === '*');
  if (any && cors.allow_credentials) {
    log?.warn('cors: allow_origins has "*" and allow_credentials is on; the wildcard answer never carries credentials (only origins listed by name get them)');
  }
  return {
    explicit,
    any,
    credentials: cors.allow_credentials,
    methods: cors.allow_methods.some((m) => m.trim() === '*') ? ALL_METHODS : cors.allow_methods.map((m) => m.trim().toUpperCase()).join(', '),
    headers: cors.allow_headers.some((h) => h.trim() === '*') ? undefined : cors.allow_headers.map((h) => h.trim().toLowerCase()).join(', '),
  };
}

export function corsPolicy(config: Config, log?: Logger): CorsPolicy {
  let fingerprint = '';
  let c: Compiled | undefined;
  const current = (): Compiled => {
    const fp = JSON.stringify(config.cors);
    if (!c || fp !== fingerprint) {
      c = compile(config.cors, log);
      fingerprint = fp;
    }
    return c;
  };
  current(); // warn about the configuration at start, not at the first request

  /** the origin and credential headers, or undefined when this origin is not allowed */
  const allow = (origin: string): Record<string, string> | undefined => {
    const p = current();
    if (p.explicit.has(normaliseOrigin(origin))) {
      return { 'access-control-allow-origin': origin, ...(p.credentials ? { 'access-control-allow-credentials': 'true' } : {}) };
    }
    if (p.any) return { 'access-control-allow-origin': '*' };
    return undefined;
  };

  return {
    allows: (origin) => allow(origin) !== undefined,
    response(origin): Record<string, string> {
      if (!origin) return {};
      const a = allow(origin);
      if (!a) return { vary: 'Origin' };
      return { vary: 'Origin', ...a, 'access-control-expose-headers': EXPOSED };
    },
    preflight(origin, requestHeaders): Record<string, string> {
      if (!origin) return {};
      const a = allow(origin);
      if (!a) return { vary: 'Origin' };
      const p = current();
      const out: Record<string, string> = { vary: 'Origin', ...a, 'access-control-allow-methods': p.methods, 'access-control-max-age': MAX_AGE_S };
      if (p.headers !== undefined) {
        if (p.headers) out['access-control-allow-headers'] = p.headers;
      } else {
        out.vary = 'Origin, Access-Control-Request-Headers';
        const asked = requestHeaders?.trim();
        if (asked && HEADER_LIST.test(asked)) out['access-control-allow-headers'] = asked.toLowerCase();
      }
      return out;
    },
  };
}
