/**
 * Rate limiting at the edge (SPEC rate_limiting), with counters every edge shares.
 *
 * Which requests: ratelimit-paths.ts (overrides > exclude > protected). How many:
 * ratelimit-strategy.ts (sliding log, token bucket, client-anchored fixed window). The check
 * runs after the CORS preflight and before routing; an OPTIONS preflight is never counted.
 *
 * Whose budget (`key_type`):
 * - `ip`: the client address — the socket peer, or the first X-Forwarded-For entry when the
 *   peer is in app.trusted_proxies (clientAddress); anybody else's X-Forwarded-For is ignored,
 *   so a client cannot spoof its way to a fresh budget. `::ffff:` IPv4-mapped forms count as
 *   the IPv4 address.
 * - `session_id`: the session the request carries — a session cookie (`cortado_admin`,
 *   `cortado_assistant`, every kind session.ts names), an `x-session-id` header (asked as every
 *   session kind at once), or an API token (`Authorization: Bearer`, `x-mcp-token`).
 * - `user_id`: the user behind that session or token (all of a user's sessions share one budget).
 * - An auto session (plugins.auth.auto_session) counts as its client address under every
 *   key_type: anyone may mint one, so it must never buy a fresh budget.
 * A session id or token is believed only after the identity actor confirmed it (IdentitySession,
 * TokenCheck over the bus); an unknown, expired or unverifiable one (identity not answering)
 * falls back to the client-address budget. So inventing session ids never buys a fresh budget:
 * it only spends the caller's address budget. Answers are cached in this process (known: 30 s or
 * until the session ends; unknown: 10 s), keyed by a hash; secrets never reach the store or logs.
 *
 * Shared store: one JetStream KV bucket (ratelimitBucket) holds one small JSON state per rule and
 * client, under hashed keys. Every update is a compare-and-swap on the key's revision
 * (`update` of runtime/kv.ts: create for a new key, replace at the revision read), retried on conflict, so any
 * number of edges enforce ONE limit: concurrent requests through two edges cannot both take the
 * last unit. Cost: one KV read and one KV write per allowed request (≈ 0.5 ms on loopback).
 * Inside a process, updates of one key run one after the other (fewer conflicts);
 * after 50 lost races in a row the request is refused with Retry-After 1 (a key that hot is being
 * hammered). Only allowed requests write. Keys expire from the bucket after its TTL (the longest
 * window, at least one hour) of silence.
 *
 * Local cache, and why it cannot let more through: a REFUSAL is remembered here until its
 * Retry-After time, and requests for that key are refused without asking the store. Every other
 * edge can only use up quota, never give it back before that time, so such a refusal is exactly
 * what the store would have answered. Allowed requests always go to the store.
 *
 * When the store is unreachable (no JetStream, timeouts of 1 s): FAIL OPEN — the request passes
 * without RateLimit headers, a warning is logged (at most every 30 s), and the store is not tried
 * again for 5 s. A limiter must not take the service down with it; nothing here ever throws.
 *
 * Headers (IETF draft-ietf-httpapi-ratelimit-headers, the RateLimit-Limit/-Remaining/-Reset
 * form), on every limited request, allowed or not: `RateLimit-Limit` (L), `RateLimit-Remaining`,
 * `RateLimit-Reset` (seconds until Remaining next grows, see the strategy file), and
 * `RateLimit-Policy: L;w=W`. A refusal is 429 RATE_LIMITED in the usual error body with
 * `Retry-After` (whole seconds, at least 1).
 */
import { createHash } from 'node:crypto';
import type { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { KvContention, type Kv } from '../../runtime/kv.js';
import type { Logger } from '../../runtime/log.js';
import type { SessionKind } from '../../protocol/schemas/identity.js';
import { Bucket, IdentitySession, TokenCheck, ratelimitBucket } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { HttpRequest } from './server.js';
import { compileRules, type Rule, type RuleSet } from './ratelimit-paths.js';
import { countRateLimited } from '../../runtime/metrics.js';
import { decide, type Strategy, type Verdict } from './ratelimit-strategy.js';
import { clientAddress, COOKIE, sessionToken } from './session.js';
import { SESSION_HEADER, TOKEN_HEADER as MCP_TOKEN_HEADER } from '../caller.js';

export interface RateLimitResult {
  allowed: boolean;
  /** RateLimit-* on every limited request; Retry-After too when refused; none when failing open */
  headers: Record<string, string>;
  /** refused only: what to send */
  error?: CortadoError;
}

export interface RateLimiter {
  /** undefined (synchronously, no promise) when no limit applies to this request */
  check(req: HttpRequest, rid: string): Promise<RateLimitResult> | undefined;
  /**
   * A request that carries `units` pieces of work (an MCP batch of tool calls) counts as that
   * many: the units beyond the one `check` took, all or none, on the same rule and budget.
   * undefined when no limit applies (or units is 1).
   */
  charge(req: HttpRequest, rid: string, units: number): Promise<RateLimitResult> | undefined;
}

export interface RateLimiterOptions {
  bus: Bus;
  config: Config;
  log: Logger;
  /** the clock (tests); wall-clock ms, shared by every edge */
  now?: () => number;
}

const KNOWN_TTL_MS = 30_000;
const UNKNOWN_TTL_MS = 10_000;
const IDENTITY_TIMEOUT_MS = 2_000;
const STORE_TIMEOUT_MS = 1_000;
const STORE_RETRY_MS = 5_000;
const WARN_EVERY_MS = 30_000;
const MAX_RACES = 50;
const MIN_BUCKET_TTL_MS = 3_600_000;
const CACHE_MAX = 10_000;
/** a sliding log of more entries than this is a large value to rewrite on every request */
const SLIDING_LOG_WARN = 1_000;
const SESSION_MAX = 256;
const TOKEN_MAX = 512;

const SESSION_KINDS = Object.keys(COOKIE) as SessionKind[];

/** Whose budget: a kind and a hash (never the address, session id or name itself). */
interface Who {
  kind: 'ip' | 'sid' | 'tok' | 'user';
  id: string;
}

interface Credential {
  type: 'session' | 'token';
  secret: string;
  /** session kinds it may be (asked all at once; a cookie names its kind, x-session-id does not) */
  kinds: readonly SessionKind[];
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

export function normaliseIp(addr: string): string {
  const a = addr.trim().toLowerCase();
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

function credentials(req: HttpRequest): Credential[] {
  const out: Credential[] = [];
  for (const kind of SESSION_KINDS) {
    const token = sessionToken(req, kind);
    if (token) out.push({ type: 'session', secret: token, kinds: [kind] });
  }
  const sid = req.headers[SESSION_HEADER]?.trim();
  if (sid) out.push({ type: 'session', secret: sid, kinds: SESSION_KINDS });
  const auth = req.headers.authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (auth) out.push({ type: 'token', secret: auth, kinds: [] });
  const mcp = req.headers[MCP_TOKEN_HEADER]?.trim();
  if (mcp) out.push({ type: 'token', secret: mcp, kinds: [] });
  // longer ones are nobody's (the identity actor refuses them): they count as the address
  return out.filter((c) => c.secret.length <= (c.type === 'session' ? SESSION_MAX : TOKEN_MAX));
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

export function rateLimitHeaders(rule: Rule, v: Verdict): Record<string, string> {
  const h: Record<string, string> = {
    'ratelimit-limit': String(rule.limit),
    'ratelimit-remaining': String(v.remaining),
    'ratelimit-reset': String(Math.ceil(v.resetMs / 1000)),
    'ratelimit-policy': `${rule.limit};w=${rule.windowMs / 1000}`,
  };
  if (!v.allowed) h['retry-after'] = String(Math.max(1, Math.ceil(v.retryAfterMs / 1000)));
  return h;
}

/** Insert with a size bound: the oldest entries go first (Map keeps insertion order). */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > CACHE_MAX) {
    for (const k of map.keys()) {
      map.delete(k);
      if (map.size <= CACHE_MAX * 0.9) break;
    }
  }
}

export function createRateLimiter(opts: RateLimiterOptions): RateLimiter {
  const { bus, config, log } = opts;
  const now = opts.now ?? Date.now;

  let fingerprint = '';
  let rules: RuleSet | undefined;
  const currentRules = (): RuleSet => {
    const fp = JSON.stringify(config.rate_limiting);
    if (!rules || fp !== fingerprint) {
      rules = compileRules(config.rate_limiting);
      fingerprint = fp;
      checkTtl();
      if (config.rate_limiting.strategy === 'sliding_window' && rules.maxLimit > SLIDING_LOG_WARN) {
        log.warn({ requests_per_window: rules.maxLimit }, 'rate limit: a sliding log keeps one timestamp per allowed request of the window; with limits this large, token_bucket or fixed_window cost far less');
      }
    }
    return rules;
  };

  // ---- who is asking ----------------------------------------------------------------------

  /** who a credential is: its user, and whether it is an auto session (anyone may mint one) */
  interface Holder { user: string; auto: boolean }
  const known = new Map<string, { holder: Holder | undefined; until: number }>();

  /** The user behind a credential, or undefined when the identity actor does not know it. */
  const holderOf = async (c: Credential, rid: string): Promise<Holder | undefined> => {
    const ck = hash(`${c.type}|${c.kinds.join(',')}|${c.secret}`);
    const at = now();
    const hit = known.get(ck);
    if (hit && hit.until > at) return hit.holder;
    const ctx = { requestId: rid };
    const opts = { timeoutMs: IDENTITY_TIMEOUT_MS };
    const lookups: Array<Promise<{ username: string; expires_at: string; auto?: boolean }>> = c.type === 'token'
      ? [bus.request(TokenCheck, { token: c.secret }, ctx, opts).then((r) => r.info)]
      : c.kinds.map((kind) => bus.request(IdentitySession, { token: c.secret, kind }, ctx, opts));
    const answers = await Promise.allSettled(lookups);
    const found = answers.find((a) => a.status === 'fulfilled');
    if (found?.status === 'fulfilled') {
      const expires = Date.parse(found.value.expires_at);
      const holder = { user: found.value.username, auto: found.value.auto === true };
      remember(known, ck, { holder, until: Math.min(at + KNOWN_TTL_MS, Number.isFinite(expires) ? expires : at) });
      return holder;
    }
    // only the identity actor's "no" is remembered; silence may be a restart
    const refusedByIdentity = answers.every((a) => a.status === 'rejected' && a.reason instanceof CortadoError && (a.reason.code === 'UNAUTHORIZED' || a.reason.code === 'VALIDATION_FAILED'));
    if (refusedByIdentity) remember(known, ck, { holder: undefined, until: at + UNKNOWN_TTL_MS });
    return undefined;
  };

  const who = async (req: HttpRequest, rid: string): Promise<Who> => {
    const keyType = config.rate_limiting.key_type;
    if (keyType !== 'ip') {
      try {
        for (const c of credentials(req)) {
          const holder = await holderOf(c, rid);
          if (holder === undefined) continue;
          // an auto session is free for the asking: a fresh one must never be a fresh budget (nor
          // share one with every other auto session under its label), so it counts as its address
          if (holder.auto) break;
          if (keyType === 'user_id') return { kind: 'user', id: hash(holder.user.trim().toLowerCase()) };
          return { kind: c.type === 'token' ? 'tok' : 'sid', id: hash(`${c.type}|${c.secret}`) };
        }
      } catch (err) {
        log.debug({ err: (err as Error).message }, 'rate limit: cannot tell the session; counting the address');
      }
    }
    return { kind: 'ip', id: hash(normaliseIp(clientAddress(req, config))) };
  };

  // ---- the shared store ---------------------------------------------------------------------

  let kv: Kv<unknown> | undefined;
  let opening: Promise<Kv<unknown>> | undefined;
  let bucketTtlMs = 0;
  let downUntil = 0;
  let lastWarn = 0;
  const warn = (err: unknown, what: string): void => {
    const at = now();
    downUntil = at + STORE_RETRY_MS;
    if (at - lastWarn < WARN_EVERY_MS) return;
    lastWarn = at;
    log.warn({ err: err instanceof Error ? err.message : String(err) }, `rate limiting fails open: ${what}`);
  };
  function checkTtl(): void {
    const need = rules?.maxWindowMs ?? 0;
    if (bucketTtlMs > 0 && need > bucketTtlMs) {
      log.warn({ bucket: ratelimitBucket(bus.prefix), ttl_ms: bucketTtlMs, window_ms: need }, 'the rate-limit bucket forgets counters sooner than the longest window: limits over its TTL are weaker');
    }
  }
  const store = async (): Promise<Kv<unknown>> => {
    if (kv) return kv;
    opening ??= (async () => {
      const ttlMs = Math.max(MIN_BUCKET_TTL_MS, rules?.maxWindowMs ?? 0);
      const handle = await within(bus.bucket<unknown>(Bucket.Ratelimit, { ttlMs }), STORE_TIMEOUT_MS * 3, 'opening the rate-limit bucket');
      // another edge may have created it first, with its own TTL
      bucketTtlMs = await handle.ttlMs().catch(() => ttlMs);
      kv = handle;
      checkTtl();
      return handle;
    })().finally(() => { opening = undefined; });
    return opening;
  };

  /**
   * One request against the shared counters: read, decide, compare-and-swap, retry on a lost
   * race. `hot`: refused because the races never ended, not because the quota is used up.
   */
  const take = async (key: string, strategy: Strategy, rule: Rule, cost: number): Promise<Verdict & { hot?: true }> => {
    const bucket = await store();
    let verdict: Verdict | undefined;
    try {
      await within(bucket.update(key, (state) => {
        verdict = decide(strategy, state, now(), rule, cost);
        return verdict.allowed ? verdict.next : undefined;
      }, { tries: MAX_RACES }), STORE_TIMEOUT_MS * 2, 'updating a counter');
      return verdict!;
    } catch (err) {
      if (!(err instanceof KvContention)) throw err;
    }
    log.warn({ rule: rule.pattern, races: MAX_RACES }, 'rate limit: too many concurrent updates of one counter; refusing this request');
    return { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: 1000, hot: true };
  };

  // one update per key at a time in this process: the others wait instead of losing races
  const chains = new Map<string, Promise<void>>();
  const serial = <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const run = (chains.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(() => undefined, () => undefined);
    chains.set(key, tail);
    void tail.then(() => { if (chains.get(key) === tail) chains.delete(key); });
    return run;
  };

  /** Refusals remembered until their Retry-After (see the header: this never lets more through). */
  const refused = new Map<string, number>();
  const stillRefused = (key: string): Verdict | undefined => {
    const until = refused.get(key);
    if (until === undefined) return undefined;
    const left = until - now();
    if (left > 0) return { allowed: false, remaining: 0, resetMs: left, retryAfterMs: left };
    refused.delete(key);
    return undefined;
  };

  /** `units`: what the whole request counts as (more than 1: a batch whose units beyond the first were refused) */
  const refusal = (rule: Rule, v: Verdict, units = 1): RateLimitResult => {
    const headers = rateLimitHeaders(rule, v);
    const seconds = headers['retry-after'];
    countRateLimited(rule.pattern);
    const quota = `${rule.limit} per ${rule.windowMs / 1000} s for ${rule.pattern}`;
    const what = units === 1
      ? `at most ${quota}; try again in ${seconds} s`
      : units > rule.limit
        ? `this request counts as ${units} (one per tool call), more than the ${quota}: send fewer at once`
        : `this request counts as ${units} (one per tool call) and ${v.remaining + 1} of ${quota} were left, its own included; try again in ${seconds} s`;
    return { allowed: false, headers, error: new CortadoError('RATE_LIMITED', `too many requests: ${what}`) };
  };

  const run = async (req: HttpRequest, rid: string, rule: Rule, cost = 1, units = cost): Promise<RateLimitResult> => {
    try {
      const strategy = config.rate_limiting.strategy as Strategy;
      const w = await who(req, rid);
      const key = `${rule.id}.${w.kind}.${w.id}`;
      const cached = stillRefused(key);
      if (cached) return refusal(rule, cached, units);
      if (now() < downUntil) return { allowed: true, headers: {} };
      // a request that waited in line behind the refusal need not ask the store either
      const v = await serial(key, async () => stillRefused(key) ?? take(key, strategy, rule, cost));
      if (v.allowed) return { allowed: true, headers: rateLimitHeaders(rule, v) };
      // only a refusal of one request says the budget is spent: a large batch refused may leave room for smaller ones
      if (!('hot' in v) && cost === 1) remember(refused, key, now() + v.retryAfterMs);
      return refusal(rule, v, units);
    } catch (err) {
      warn(err, 'the shared counters (JetStream KV) cannot be reached');
      return { allowed: true, headers: {} };
    }
  };

  if (config.rate_limiting.enabled) {
    // open the bucket now, so the first limited request does not pay for it
    void Promise.resolve().then(currentRules).then(store).catch((err: unknown) => warn(err, 'the shared counters (JetStream KV) cannot be reached'));
  }

  const ruleOf = (req: HttpRequest): Rule | undefined => {
    if (!config.rate_limiting.enabled) return undefined;
    try {
      return currentRules().ruleFor(req.path);
    } catch (err) {
      warn(err, 'the rate_limiting section cannot be applied');
      return undefined;
    }
  };

  return {
    check(req, rid) {
      const rule = ruleOf(req);
      return rule ? run(req, rid, rule) : undefined;
    },
    charge(req, rid, units) {
      const rule = units > 1 ? ruleOf(req) : undefined;
      if (!rule) return undefined;
      // more than the whole quota can never fit: refused without touching the counters
      if (units > rule.limit) return Promise.resolve(refusal(rule, { allowed: false, remaining: 0, resetMs: rule.windowMs, retryAfterMs: rule.windowMs }, units));
      return run(req, rid, rule, units - 1, units);
    },
  };
}
