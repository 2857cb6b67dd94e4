/**
 * Method + path patterns (`/api/tables/:name`) → handlers; 404 and 405 told apart. A path
 * parameter is percent-decoded, and one that holds a control character or a lone surrogate
 * after decoding (protocol/schemas/text.ts) is refused with 400 naming it, before any handler
 * runs: ids and names go on to stores, databases and logs.
 *
 * Every route says what it needs of its caller (`auth`, edge/caller.ts). The admin, assistant,
 * auth, admin_or_any and open routes get their caller resolved before the handler runs (after the path check), so
 * a handler of theirs never runs for a stranger; the others resolve it when they ask
 * (`ctx.caller()`): the legacy assistant needs its body's session_id first, and MCP requests
 * of an open session are matched by their token's digest rather than asked about each time.
 */
import type { TObject, TSchema } from 'typebox';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { textProblem } from '../../protocol/schemas/text.js';
import type { Owner } from '../../protocol/scope.js';
import type { CallerFor, CallerHint, CallerResolver, RouteAuth } from '../caller.js';
import type { HttpRequest, HttpResponse } from './server.js';

/** What the edge knows of a request before routing. */
export interface RequestContext {
  rid: string;
  log: Logger;
}

export interface RouteContext<A extends RouteAuth = RouteAuth> extends RequestContext {
  /** who is calling, as the route's `auth` requires; resolved once per request (later calls share it) */
  caller(hint?: CallerHint): Promise<CallerFor<A>>;
  /** whose what an open route starts is (CallerResolver.owner); resolved once per request */
  owner(): Promise<Owner>;
  /** who is signed in, to name what the request asks where its caller is nobody (CallerResolver.user); resolved once per request */
  user(): Promise<string | undefined>;
}

export type RouteHandler<A extends RouteAuth = RouteAuth> = (req: HttpRequest, res: HttpResponse, ctx: RouteContext<A>) => Promise<void> | void;

/**
 * What a route publishes of itself in the OpenAPI document (edge/contracts/openapi.ts, served
 * at /openapi.json): the same TypeBox schemas the route reads its body with and answers with.
 * A route without `reply` is published with a generic object and says so.
 */
export interface RouteDoc {
  /** one line: what the route does */
  summary?: string;
  /** the JSON body it reads (`readJson` with this schema) */
  body?: TSchema;
  /** the JSON body of its success answer */
  reply?: TSchema;
  /** the status of its success answer, when not 200 */
  status?: number;
  /** the media type of its success answer, when it is not JSON (text/html, text/csv, text/event-stream, …) */
  produces?: string;
  /** its query parameters, as an object of (optional) strings, numbers or booleans */
  query?: TObject;
  /** a JSON route that also streams its steps as SSE when asked with `Accept: text/event-stream` */
  sse?: boolean;
}

export interface RouteOptions<A extends RouteAuth> extends RouteDoc {
  /** what the route needs of its caller (edge/caller.ts) */
  auth: A;
}

/** One route as the router holds it: method, pattern, what it needs of its caller, what it publishes. */
export interface RouteInfo {
  method: string;
  pattern: string;
  auth: RouteAuth;
  doc: RouteDoc;
}

/** A matched route, ready to run with the request's context. */
export type BoundHandler = (req: HttpRequest, res: HttpResponse, ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  pattern: string;
  segments: string[];
  auth: RouteAuth;
  doc: RouteDoc;
  handler: BoundHandler;
}

/** `pattern`: the matched route's (the `route` label of the HTTP metrics, never the raw path) */
export type Match = { handler: BoundHandler; params: Record<string, string>; pattern: string } | { notFound: true } | { allowed: string[] };

/** Routes whose caller is resolved before the handler runs. */
const UP_FRONT: ReadonlySet<RouteAuth> = new Set<RouteAuth>(['admin', 'assistant', 'auth', 'admin_or_any', 'open']);

export class Router {
  private readonly routes: Route[] = [];

  constructor(private readonly callers: CallerResolver) {}

  add<A extends RouteAuth>(method: string, pattern: string, opts: RouteOptions<A>, handler: RouteHandler<A>): this {
    const { auth, ...doc } = opts;
    this.routes.push({ method: method.toUpperCase(), pattern, segments: split(pattern), auth, doc, handler: this.bind(auth, handler as RouteHandler) });
    return this;
  }

  get<A extends RouteAuth>(pattern: string, opts: RouteOptions<A>, handler: RouteHandler<A>): this {
    return this.add('GET', pattern, opts, handler);
  }

  post<A extends RouteAuth>(pattern: string, opts: RouteOptions<A>, handler: RouteHandler<A>): this {
    return this.add('POST', pattern, opts, handler);
  }

  /** Every route, what it needs of its caller and what it publishes of itself, in the order they were added. */
  table(): RouteInfo[] {
    return this.routes.map((r) => ({ method: r.method, pattern: r.pattern, auth: r.auth, doc: r.doc }));
  }

  match(method: string, path: string): Match {
    const parts = split(path);
    const allowed: string[] = [];
    for (const r of this.routes) {
      const params = matchSegments(r.segments, parts);
      if (!params) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { handler: refusing(params) ?? r.handler, params, pattern: r.pattern };
      allowed.push(r.method);
    }
    return allowed.length ? { allowed } : { notFound: true };
  }

  /** A route's handler with its caller: resolved first for the routes that need it up front. */
  private bind(auth: RouteAuth, handler: RouteHandler): BoundHandler {
    const callers = this.callers;
    const upFront = UP_FRONT.has(auth);
    return async (req, res, base) => {
      let resolved: Promise<CallerFor<RouteAuth>> | undefined;
      let owned: Promise<Owner> | undefined;
      let named: Promise<string | undefined> | undefined;
      const ctx: RouteContext = {
        rid: base.rid,
        get log() { return base.log; },
        caller: (hint) => (resolved ??= callers.resolve(auth, req, base.rid, hint)),
        owner: () => (owned ??= callers.owner(req, base.rid)),
        user: () => (named ??= callers.user(req, base.rid)),
      };
      if (upFront) await ctx.caller();
      await handler(req, res, ctx);
    };
  }
}

/** A handler answering 400 for the first path parameter that is no clean name, or undefined. */
function refusing(params: Record<string, string>): BoundHandler | undefined {
  for (const [name, value] of Object.entries(params)) {
    const problem = textProblem(value, 'name');
    if (problem) {
      const label = name === '*' ? 'the path' : `path parameter ${name}`;
      return () => {
        throw new CortadoError('VALIDATION_FAILED', `${label}: ${problem}`, { errors: [{ path: name === '*' ? '/' : `:${name}`, message: problem }] });
      };
    }
  }
  return undefined;
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  const last = pattern[pattern.length - 1];
  const rest = last === '*';
  if (rest ? parts.length < pattern.length - 1 : parts.length !== pattern.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === '*') {
      params['*'] = parts.slice(i).join('/');
      return params;
    }
    const v = parts[i];
    if (v === undefined) return undefined;
    if (p.startsWith(':')) {
      try {
        params[p.slice(1)] = decodeURIComponent(v);
      } catch {
        return undefined;
      }
    } else if (p !== v) return undefined;
  }
  return params;
}
