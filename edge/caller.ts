/**
 * Who is calling: the one place that turns an HTTP request into a Caller — `{kind, user, scope,
 * owner}` and the credential it proved — for what a route says it needs (its `auth` option on
 * the router, edge/http/router.ts). Routes never read a cookie, a token or a session header.
 *
 * | auth        | who gets through                                                   | refused with |
 * |-------------|--------------------------------------------------------------------|--------------|
 * | `none`      | anyone (no caller is resolved)                                      | —            |
 * | `admin`     | the admin panel's session (cookie `cortado_admin`)                  | 401; 403 CSRF |
 * | `assistant` | the assistant gate's session (`X-Session-ID`, or cookie `cortado_assistant`) | 401; 403 CSRF |
 * | `auth`      | a plugins.auth session or auto session (`X-Session-ID`, or cookie `cortado_auth`; an auto session only from an Origin in auto_session.allowed_origins when that list is set) | 404 when plugins.auth is off; 401; 403 CSRF; 403 origin |
 * | `any`       | the legacy assistant's callers, first that applies: the assistant session (required when plugins.assistant_login is on; its cookie, or its secret in `X-Session-ID` for an embedded widget), an API token (`Authorization: Bearer ctd_…`), the assistant cookie, a session in `X-Session-ID` (the assistant gate's, or a plugins.auth session or auto session; an auto session only from an Origin in auto_session.allowed_origins when that list is set), else an anonymous widget (its `session_id` and the client address) unless query.require_session | 401; 403 origin |
 * | `token`     | an API token (MCP): `x-mcp-token`, `Authorization: Bearer`, or `?token=` | 401 |
 * | `admin_or_any` | the admin panel's session when its cookie is sent and valid (reads of the semantic layer), else what `any` takes | as `any` |
 * | `open`      | the open API (/api/query, /api/tables, /tables): anyone, no caller resolved — but while plugins.auth.require_login, only what `signed_in` takes, never an auto session, and the question runs in that caller's scope | 401 |
 * | `login`     | a sign-in (POST /admin/login, /assistant/login, /auth/login, /auth/auto-session): anyone from this server's own pages or from no browser at all; from another site (Sec-Fetch-Site, else Origin against Host) never the admin panel, and the others only as JSON from an origin CORS allows — and then without a cookie (the session comes back in the body for `X-Session-ID`) | 403 origin |
 * | `signed_in` | anyone signed in (`analytics.access: signed_in`): an API token when one is sent (as for `token`; a wrong one is refused), else the first session that holds — the admin cookie, the assistant cookie, a session in `X-Session-ID` (an embedded widget: the assistant gate's, or with plugins.auth on an auth session or auto session, the auto session only from an Origin in auto_session.allowed_origins), the plugins.auth cookie | 401; 403 origin |
 *
 * Writes (POST, PUT, PATCH, DELETE) authenticated by a session cookie must echo the session's
 * CSRF token in `x-csrf-token` (admin, assistant and auth routes; a header-borne session or
 * token has no ambient credential to forge). The `any` routes take the assistant cookie without
 * that check, as they always have (SameSite=Strict keeps other sites' forms from sending it).
 *
 * While plugins.auth.require_login is on (with plugins.auth), nobody reaches the database
 * without a login: `any` takes no anonymous widget, no route takes an auto session (401), and
 * `open` routes take only a signed-in caller.
 *
 * Sign-ins are the one write that needs no session, so a cross-site form could post one and
 * leave the victim's browser signed in as the attacker (login CSRF): `login` tells a sign-in
 * from this server's own pages from another site's, refuses what another site may not do, and
 * a cookie is set only for this server's own pages.
 *
 * Scope and owner strings follow protocol/scope.ts. Owners of cookies and widgets are digests:
 * no secret, session id or address leaves the edge in them.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Bus, Ctx } from '../runtime/bus.js';
import { CortadoError } from '../protocol/errors.js';
import { ownerOf, scopeOf, type Owner, type Scope } from '../protocol/scope.js';
import type { ApiTokenInfo, SessionInfo, SessionKind } from '../protocol/schemas/identity.js';
import { IdentitySession, TokenCheck } from '../protocol/subjects.js';
import type { Config } from '../config/schema.js';
import type { HttpRequest } from './http/server.js';
import { corsPolicy } from './http/cors.js';
import { clientAddress, CSRF_HEADER, sessionToken } from './http/session.js';

/** What a route needs of its caller (the router's `auth` option): see the table above. */
export const RouteAuth = {
  None: 'none',
  Admin: 'admin',
  Assistant: 'assistant',
  Auth: 'auth',
  Any: 'any',
  Token: 'token',
  AdminOrAny: 'admin_or_any',
  SignedIn: 'signed_in',
  Login: 'login',
  Open: 'open',
} as const;
export type RouteAuth = (typeof RouteAuth)[keyof typeof RouteAuth];

/** The header SQLatte's auth widget sends its session in. */
export const SESSION_HEADER = 'x-session-id';
/** The header MCP clients send their API token in. */
export const TOKEN_HEADER = 'x-mcp-token';
/** The query parameter MCP clients that can only be given a URL send their token in. */
export const TOKEN_QUERY = 'token';
/** the longest API token the identity actor takes */
const TOKEN_MAX = 512;

export interface AnonymousCaller {
  readonly kind: 'anonymous';
}

/** A signed-in session: the admin panel, the assistant gate, or plugins.auth (`auto`: an auto session). */
export interface SessionCaller<K extends 'admin' | 'assistant' | 'auth' | 'auto' = 'admin' | 'assistant' | 'auth' | 'auto'> {
  readonly kind: K;
  readonly user: string;
  /** auth sessions that logged in: `s:<id>`, their own database connection */
  readonly scope?: Scope;
  /** assistant: `a:<digest of the cookie>`; auth and auto: `s:<id>`; admin: none */
  readonly owner: K extends 'admin' ? undefined : Owner;
  /** the session secret (logout, minting a token); never logged */
  readonly secret: string;
  readonly session: SessionInfo;
}

export interface TokenCaller {
  readonly kind: 'token';
  readonly user: string;
  /** `t:<id>` when the token has a db_config */
  readonly scope?: Scope;
  /** `t:<id>` */
  readonly owner: Owner;
  /** the token itself; never logged */
  readonly secret: string;
  readonly token: ApiTokenInfo;
}

/** An anonymous widget of the legacy assistant, known by its session_id and address only. */
export interface WidgetCaller {
  readonly kind: 'widget';
  readonly owner: Owner;
}

/** A sign-in's caller: where it came from (who it is, the identity actor decides). */
export interface LoginCaller {
  readonly kind: 'login';
  /** from this server's own pages, or from no browser: the session may be set as a cookie */
  readonly sameOrigin: boolean;
}

export type Caller = AnonymousCaller | SessionCaller | TokenCaller | WidgetCaller | LoginCaller;

/** The caller a route with this `auth` option gets. */
export type CallerFor<A extends RouteAuth> =
  A extends 'admin' ? SessionCaller<'admin'>
    : A extends 'assistant' ? SessionCaller<'assistant'>
      : A extends 'auth' ? SessionCaller<'auth' | 'auto'>
        : A extends 'any' ? SessionCaller<'assistant' | 'auth' | 'auto'> | TokenCaller | WidgetCaller
          : A extends 'token' ? TokenCaller
            : A extends 'admin_or_any' ? SessionCaller<'admin'> | SessionCaller<'assistant' | 'auth' | 'auto'> | TokenCaller | WidgetCaller
              : A extends 'signed_in' ? SessionCaller | TokenCaller
              : A extends 'login' ? LoginCaller
              : A extends 'open' ? AnonymousCaller | SessionCaller<'admin' | 'assistant' | 'auth'> | TokenCaller
              : AnonymousCaller;

/** What a route knows that the request headers do not say (read from its body). */
export interface CallerHint {
  /** the legacy widget's session_id: with the client address, the owner of an anonymous widget */
  widgetSession?: string;
  /** `login` routes: which sign-in (the admin panel's is taken from its own pages only) */
  signIn?: SessionKind | 'auto';
}

export interface CallerResolver {
  resolve<A extends RouteAuth>(auth: A, req: HttpRequest, rid: string, hint?: CallerHint): Promise<CallerFor<A>>;
  /**
   * Whose a question on an open route (/api/query) is, for what it starts (its conversation,
   * its feedback): the owner `any` finds — the assistant session, API token or session the
   * request carries and that holds — else the anonymous caller of this address, as a legacy
   * widget without a session_id. Nothing is refused here, and the route's database scope and
   * user stay its own: this names an owner only.
   */
  owner(req: HttpRequest, rid: string): Promise<Owner>;
  /**
   * Who is signed in on this request, to name what it asks (analytics, audit, the engine's
   * end user) where its route resolved nobody (an open route, an anonymous widget): the first
   * credential `signed_in` takes that holds. Names only — no access follows from it, the
   * route's scope and owner stay its own — and nothing is refused (a credential that does not
   * hold, or a cookie write without its CSRF token, names nobody).
   */
  user(req: HttpRequest, rid: string): Promise<string | undefined>;
  /**
   * Every sign-in this request carries that holds (GET /api/me: who the page says you are, what
   * it offers you, and what Sign out ends): `primary` is the one `signed_in` routes take; the
   * others are each session cookie (admin, assistant, plugins.auth) and the API token on their
   * own. Names only, nothing refused: a credential that does not hold is left out.
   */
  held(req: HttpRequest, rid: string): Promise<HeldSignIns>;
}

export interface HeldSignIns {
  primary?: SessionCaller | TokenCaller;
  admin?: SessionCaller<'admin'>;
  assistant?: SessionCaller<'assistant'>;
  auth?: SessionCaller<'auth' | 'auto'>;
  token?: TokenCaller;
}

/** The bus context of a caller's requests: request id, user and database scope. */
export function callerCtx(rid: string, caller: Caller): Ctx {
  const user = 'user' in caller ? caller.user : undefined;
  const scope = 'scope' in caller ? caller.scope : undefined;
  return { requestId: rid, ...(user ? { user } : {}), ...(scope ? { scope } : {}) };
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ANONYMOUS: AnonymousCaller = Object.freeze({ kind: 'anonymous' });

/** A short digest that names a secret or an address in an owner without revealing it. */
function digest(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 40);
}

/** Whether two secrets are equal, in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/** The API token of an MCP request, if any: the header first, then a bearer token, then the query. */
export function mcpToken(req: HttpRequest): string | undefined {
  const header = req.headers[TOKEN_HEADER]?.trim();
  if (header) return header;
  const auth = req.headers.authorization?.trim();
  if (auth && /^bearer\s+/i.test(auth)) {
    const bearer = auth.replace(/^bearer\s+/i, '').trim();
    if (bearer) return bearer;
  }
  const all = req.query.getAll(TOKEN_QUERY);
  // two different tokens in one URL: which one was meant is not for the server to guess
  if (new Set(all).size > 1) throw new CortadoError('UNAUTHORIZED', `send one token (the ${TOKEN_QUERY} query parameter is repeated with different values)`);
  const query = all[0]?.trim();
  return query || undefined;
}

/** An API token sent as `Authorization: Bearer ctd_…` (the legacy assistant takes no other form). */
function bearerApiToken(req: HttpRequest): string | undefined {
  return /^Bearer\s+(ctd_\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
}

/** `host[:port]` as a browser writes it in an Origin: lower case, without the scheme's default port. */
function hostOf(host: string, scheme: string): string {
  const h = host.trim().toLowerCase();
  return (scheme === 'https' && h.endsWith(':443')) || (scheme === 'http' && h.endsWith(':80')) ? h.slice(0, h.lastIndexOf(':')) : h;
}

/**
 * Whether a request comes from this server's own pages (or from no browser at all). Browsers say
 * so in Sec-Fetch-Site, which no page can set; older ones only send Origin, compared with the
 * Host the request was sent to (or, from a trusted proxy, X-Forwarded-Host). No Origin at all:
 * not a browser's cross-site request (browsers send one with every cross-origin POST).
 */
export function sameOrigin(req: HttpRequest, config: Config): boolean {
  const site = req.headers['sec-fetch-site']?.trim().toLowerCase();
  if (site) return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin?.trim();
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed frame, a file) or garbage: no page of ours
  }
  const scheme = url.protocol.replace(/:$/, '');
  const hosts = [req.headers.host];
  if (config.app.trusted_proxies.includes(req.remoteAddress)) hosts.push(req.headers['x-forwarded-host']?.split(',')[0]);
  return hosts.some((h) => h !== undefined && h.trim() !== '' && hostOf(h, scheme) === hostOf(url.host, scheme));
}

export function createCallerResolver(deps: { bus: Bus; config: Config }): CallerResolver {
  const { bus, config } = deps;
  const cors = corsPolicy(config);

  const session = (secret: string, kind: SessionKind, rid: string): Promise<SessionInfo> =>
    bus.request(IdentitySession, { token: secret, kind }, { requestId: rid });

  /** plugins.auth.require_login in force (read on every request: it may change at run time) */
  const requireLogin = (): boolean => config.plugins.auth.enabled && config.plugins.auth.require_login;
  /** an auto session is no login: refused while logins are required */
  const noAutoSession = (): void => {
    if (requireLogin()) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /auth/login): plugins.auth.require_login refuses auto sessions');
  };

  const checkCsrf = (req: HttpRequest, s: SessionInfo, kind: SessionKind): void => {
    if (WRITES.has(req.method) && !sameSecret(req.headers[CSRF_HEADER] ?? '', s.csrf)) {
      // details name the header and where to read it, so a page whose session changed since it read
      // its token (a sign-in in another tab or frame) can read it again and retry (lib/api.js)
      throw new CortadoError('FORBIDDEN', `missing or wrong ${CSRF_HEADER} header (read it from GET /${kind}/session)`, { header: CSRF_HEADER, session: `/${kind}/session` });
    }
  };

  /** The admin panel's or the assistant gate's session (cookie), CSRF-checked on writes. */
  async function cookieSession<K extends 'admin' | 'assistant'>(kind: K, req: HttpRequest, rid: string): Promise<SessionCaller<K>> {
    const secret = sessionToken(req, kind);
    if (!secret) throw new CortadoError('UNAUTHORIZED', `sign in ${kind === 'admin' ? 'to the admin panel ' : ''}first (POST /${kind}/login)`);
    const s = await session(secret, kind, rid);
    checkCsrf(req, s, kind);
    const owner = (kind === 'admin' ? undefined : ownerOf('assistant', digest(secret))) as SessionCaller<K>['owner'];
    return { kind, user: s.username, owner, secret, session: s };
  }

  /**
   * The assistant gate's session: the header (an embedded widget on another site, where no
   * cookie goes; its secret came back in the login's body), else the cookie (CSRF-checked on
   * writes) — as the auth routes and the other signed-in routes take it.
   */
  async function assistantSession(req: HttpRequest, rid: string): Promise<SessionCaller<'assistant'>> {
    const header = req.headers[SESSION_HEADER]?.trim();
    if (!header) return cookieSession('assistant', req, rid);
    const s = await session(header, 'assistant', rid);
    return { kind: 'assistant', user: s.username, owner: ownerOf('assistant', digest(header)), secret: header, session: s };
  }

  /** A plugins.auth session: the header (SQLatte widgets), else the cookie (CSRF-checked on writes). */
  async function authSession(req: HttpRequest, rid: string): Promise<SessionCaller<'auth' | 'auto'>> {
    if (!config.plugins.auth.enabled) throw new CortadoError('NOT_FOUND', 'no such route: multi-user sessions are off (plugins.auth.enabled is false)');
    const header = req.headers[SESSION_HEADER]?.trim();
    const secret = header || sessionToken(req, 'auth');
    if (!secret) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /auth/login)');
    const s = await session(secret, 'auth', rid);
    if (!header) checkCsrf(req, s, 'auth');
    if (!s.id) throw new CortadoError('INTERNAL', 'the identity actor answered an auth session without its id');
    const self = scopeOf('session', s.id);
    // an auto session is no login (refused while logins are required); it runs on the server's
    // own database: no scope, but still its own owner; and only from the pages allowed_origins
    // lists, on every route that takes one
    if (s.auto) {
      noAutoSession();
      autoOrigin(req);
    }
    return s.auto
      ? { kind: 'auto', user: s.username, owner: self, secret, session: s }
      : { kind: 'auth', user: s.username, scope: self, owner: self, secret, session: s };
  }

  async function apiToken(secret: string, rid: string): Promise<TokenCaller> {
    const { info } = await bus.request(TokenCheck, { token: secret }, { requestId: rid });
    const self = scopeOf('token', info.id);
    return { kind: 'token', user: info.username, owner: self, ...(Object.keys(info.db_config).length > 0 ? { scope: self } : {}), secret, token: info };
  }

  /** The valid MCP token of this request, or UNAUTHORIZED (missing, unknown, expired, revoked). */
  async function mcp(req: HttpRequest, rid: string): Promise<TokenCaller> {
    const secret = mcpToken(req);
    if (!secret) throw new CortadoError('UNAUTHORIZED', `send an API token in the ${TOKEN_HEADER} header (or the ${TOKEN_QUERY} query parameter)`);
    if (secret.length > TOKEN_MAX) throw new CortadoError('UNAUTHORIZED', 'the token is missing, invalid, expired or revoked');
    return apiToken(secret, rid);
  }

  /**
   * The session an embedded widget sends in `X-Session-ID` (cookies do not cross sites): the
   * assistant gate's, else (plugins.auth on, and not when the gate requires a directory login) an
   * auth session or auto session. One that holds none of these is refused, never ignored.
   */
  async function headerSession(req: HttpRequest, header: string, rid: string, gate: boolean): Promise<SessionCaller<'assistant' | 'auth' | 'auto'>> {
    const unless401 = (err: unknown): undefined => {
      if (err instanceof CortadoError && err.code === 'UNAUTHORIZED') return undefined;
      throw err;
    };
    const a = await session(header, 'assistant', rid).catch(unless401);
    if (a) return { kind: 'assistant', user: a.username, owner: ownerOf('assistant', digest(header)), secret: header, session: a };
    if (!gate && config.plugins.auth.enabled) {
      const s = await session(header, 'auth', rid).catch(unless401);
      if (s?.id) {
        const self = scopeOf('session', s.id);
        if (!s.auto) return { kind: 'auth', user: s.username, scope: self, owner: self, secret: header, session: s };
        noAutoSession();
        autoOrigin(req);
        return { kind: 'auto', user: s.username, owner: self, secret: header, session: s };
      }
    }
    throw new CortadoError('UNAUTHORIZED', `the session in ${SESSION_HEADER} is unknown or has expired: sign in again${gate ? ' (POST /assistant/login)' : ''}`);
  }

  /** An auto session used from a browser page whose Origin plugins.auth.auto_session.allowed_origins does not list: 403. */
  function autoOrigin(req: HttpRequest): void {
    const allowed = config.plugins.auth.auto_session.allowed_origins;
    const origin = req.headers.origin;
    if (!allowed.length || origin === undefined) return;
    const norm = (o: string): string => o.trim().toLowerCase().replace(/\/+$/, '');
    if (!allowed.some((o) => norm(o) === norm(origin))) {
      throw new CortadoError('FORBIDDEN', `this page (Origin ${origin.slice(0, 200)}) may not use an auto session: it is not in plugins.auth.auto_session.allowed_origins`);
    }
  }

  /** The legacy assistant's caller (see `any` in the table above). */
  async function legacy(req: HttpRequest, rid: string, hint: CallerHint): Promise<SessionCaller<'assistant' | 'auth' | 'auto'> | TokenCaller | WidgetCaller> {
    const cookie = sessionToken(req, 'assistant');
    const header = req.headers[SESSION_HEADER]?.trim() || undefined;
    if (config.plugins.assistant_login.enabled) {
      if (!cookie && header) return headerSession(req, header, rid, true);
      if (!cookie) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /assistant/login)');
      const s = await session(cookie, 'assistant', rid);
      return { kind: 'assistant', user: s.username, owner: ownerOf('assistant', digest(cookie)), secret: cookie, session: s };
    }
    const bearer = bearerApiToken(req);
    if (bearer) return apiToken(bearer, rid);
    if (cookie) {
      const s = await session(cookie, 'assistant', rid).catch(() => undefined);
      if (s) return { kind: 'assistant', user: s.username, owner: ownerOf('assistant', digest(cookie)), secret: cookie, session: s };
    }
    if (header) return headerSession(req, header, rid, false);
    if (config.query.require_session) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /assistant/login), or send an API token (Authorization: Bearer ctd_…)');
    if (requireLogin()) throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /auth/login), or send an API token (Authorization: Bearer ctd_…): plugins.auth.require_login is on');
    return { kind: 'widget', owner: anonymousOwner(req, hint.widgetSession) };
  }

  /** An anonymous caller's owner: a digest of the widget's session_id (none on /api/query) and the client address. */
  function anonymousOwner(req: HttpRequest, widgetSession: string | undefined): Owner {
    return ownerOf('client', digest(`${widgetSession ?? ''}|${clientAddress(req, config)}`));
  }

  /** The admin session if its cookie is sent and valid (a stale one is no refusal here), else the legacy caller. */
  async function adminOrLegacy(req: HttpRequest, rid: string, hint: CallerHint): Promise<SessionCaller<'admin'> | SessionCaller<'assistant' | 'auth' | 'auto'> | TokenCaller | WidgetCaller> {
    if (sessionToken(req, 'admin')) {
      const admin = await cookieSession('admin', req, rid).catch((err: unknown) => {
        if (err instanceof CortadoError && err.code === 'UNAUTHORIZED') return undefined;
        throw err;
      });
      if (admin) return admin;
    }
    return legacy(req, rid, hint);
  }

  /** Anyone signed in (see `signed_in` above): a token sent must hold; else the first session whose credential is sent and holds. */
  async function signedIn(req: HttpRequest, rid: string): Promise<SessionCaller | TokenCaller> {
    const caller = await signedInOrNone(req, rid);
    if (caller) return caller;
    throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /admin/login, /assistant/login or /auth/login), or send an API token (Authorization: Bearer ctd_…)');
  }

  /**
   * signedIn without the refusal: undefined when no credential is sent or none holds. An
   * anonymous question asks this on every request (to name its user in analytics), so nobody
   * signed in must not cost an error built and thrown (its stack trace is most of a request's
   * caller cost).
   */
  async function signedInOrNone(req: HttpRequest, rid: string): Promise<SessionCaller | TokenCaller | undefined> {
    if (mcpToken(req)) return mcp(req, rid);
    const unless401 = (err: unknown): undefined => {
      if (err instanceof CortadoError && err.code === 'UNAUTHORIZED') return undefined;
      throw err;
    };
    for (const kind of ['admin', 'assistant'] as const) {
      const s = sessionToken(req, kind) ? await cookieSession(kind, req, rid).catch(unless401) : undefined;
      if (s) return s;
    }
    // an embedded widget's session (no cookie crosses sites): the assistant gate's, or with
    // plugins.auth on an auth session or auto session (an auto session only from an allowed
    // Origin, 403 otherwise) — the sessions whose cookies count here, with the checks `any` makes
    const header = req.headers[SESSION_HEADER]?.trim();
    if (header) {
      const s = await headerSession(req, header, rid, false).catch(unless401);
      if (s) return s;
    }
    if (config.plugins.auth.enabled && sessionToken(req, 'auth')) {
      const s = await authSession(req, rid).catch(unless401);
      if (s) return s;
    }
    return undefined;
  }

  /** An `open` route's caller: anyone, unless logins are required (see `open` in the table above). */
  async function open(req: HttpRequest, rid: string): Promise<AnonymousCaller | SessionCaller<'admin' | 'assistant' | 'auth'> | TokenCaller> {
    if (!requireLogin()) return ANONYMOUS;
    const caller = await signedIn(req, rid).catch((err: unknown) => {
      if (err instanceof CortadoError && err.code === 'UNAUTHORIZED') {
        throw new CortadoError('UNAUTHORIZED', 'sign in first (POST /auth/login), or send an API token (Authorization: Bearer ctd_…): plugins.auth.require_login is on');
      }
      throw err;
    });
    if (caller.kind === 'auto') throw new CortadoError('INTERNAL', 'an auto session got through while plugins.auth.require_login is on');
    return caller as SessionCaller<'admin' | 'assistant' | 'auth'> | TokenCaller;
  }

  /** A sign-in (see `login` in the table above). */
  function login(req: HttpRequest, kind: CallerHint['signIn']): LoginCaller {
    if (sameOrigin(req, config)) return { kind: 'login', sameOrigin: true };
    const origin = req.headers.origin?.trim() ?? '';
    const from = origin ? ` (Origin ${origin.slice(0, 200)})` : '';
    if (kind === 'admin' || kind === undefined) {
      throw new CortadoError('FORBIDDEN', `the admin panel signs in from its own pages only: this sign-in comes from another site${from}`);
    }
    // a cross-site form can post url-encoded or text bodies without asking; JSON makes the
    // browser ask first (a CORS preflight), so a page that may not call Cortado cannot send it
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (kind !== 'auto' && type !== 'application/json') {
      throw new CortadoError('FORBIDDEN', `a sign-in from another site${from} must be a JSON request (a form post from another site is refused)`);
    }
    if (!origin || !cors.allows(origin)) {
      throw new CortadoError('FORBIDDEN', `this page${from} may not sign in here: its origin is not in cors.allow_origins`);
    }
    return { kind: 'login', sameOrigin: false };
  }

  const refusal = (err: unknown): undefined => {
    if (err instanceof CortadoError && (err.code === 'UNAUTHORIZED' || err.code === 'FORBIDDEN' || err.code === 'NOT_FOUND')) return undefined;
    throw err;
  };

  return {
    async held(req, rid) {
      const [primary, admin, assistant, auth, token] = await Promise.all([
        signedInOrNone(req, rid).catch(refusal),
        sessionToken(req, 'admin') ? cookieSession('admin', req, rid).catch(refusal) : undefined,
        sessionToken(req, 'assistant') ? cookieSession('assistant', req, rid).catch(refusal) : undefined,
        config.plugins.auth.enabled && sessionToken(req, 'auth') ? authSession(req, rid).catch(refusal) : undefined,
        (() => { try { return mcpToken(req); } catch { return undefined; } })() ? mcp(req, rid).catch(refusal) : undefined,
      ]);
      return { ...(primary ? { primary } : {}), ...(admin ? { admin } : {}), ...(assistant ? { assistant } : {}), ...(auth ? { auth } : {}), ...(token ? { token } : {}) };
    },
    async user(req, rid) {
      try {
        return (await signedInOrNone(req, rid))?.user;
      } catch (err) {
        if (err instanceof CortadoError && (err.code === 'UNAUTHORIZED' || err.code === 'FORBIDDEN' || err.code === 'NOT_FOUND')) return undefined;
        throw err;
      }
    },
    async owner(req, rid) {
      try {
        return (await legacy(req, rid, {})).owner;
      } catch (err) {
        if (err instanceof CortadoError && (err.code === 'UNAUTHORIZED' || err.code === 'FORBIDDEN')) return anonymousOwner(req, undefined);
        throw err;
      }
    },
    async resolve<A extends RouteAuth>(auth: A, req: HttpRequest, rid: string, hint: CallerHint = {}): Promise<CallerFor<A>> {
      let caller: Caller;
      switch (auth) {
        case 'admin': caller = await cookieSession('admin', req, rid); break;
        case 'assistant': caller = await assistantSession(req, rid); break;
        case 'auth': caller = await authSession(req, rid); break;
        case 'any': caller = await legacy(req, rid, hint); break;
        case 'token': caller = await mcp(req, rid); break;
        case 'admin_or_any': caller = await adminOrLegacy(req, rid, hint); break;
        case 'signed_in': caller = await signedIn(req, rid); break;
        case 'login': caller = login(req, hint.signIn); break;
        case 'open': caller = await open(req, rid); break;
        default: caller = ANONYMOUS;
      }
      return caller as CallerFor<A>;
    },
  };
}
