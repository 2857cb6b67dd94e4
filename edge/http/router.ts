/**
 * Method + path patterns (`/api/tables/:name`) → handlers; 404 and 405 told apart. A path
 * parameter is percent-decoded, and one that holds a control character or a lone surrogate
 * after decoding (protocol/schemas/text.ts) is refused with 400 naming it, before any handler
 * runs: ids and names go on to stores, databases and logs.
 */
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/log.js';
import { textProblem } from '../../protocol/schemas/text.js';
import type { HttpRequest, HttpResponse } from './server.js';

export interface RouteContext {
  rid: string;
  log: Logger;
}

export type RouteHandler = (req: HttpRequest, res: HttpResponse, ctx: RouteContext) => Promise<void> | void;

interface Route {
  method: string;
  segments: string[];
  handler: RouteHandler;
}

export type Match = { handler: RouteHandler; params: Record<string, string> } | { notFound: true } | { allowed: string[] };

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: RouteHandler): this {
    this.routes.push({ method: method.toUpperCase(), segments: split(pattern), handler });
    return this;
  }

  get(pattern: string, handler: RouteHandler): this {
    return this.add('GET', pattern, handler);
  }

  post(pattern: string, handler: RouteHandler): this {
    return this.add('POST', pattern, handler);
  }

  match(method: string, path: string): Match {
    const parts = split(path);
    const allowed: string[] = [];
    for (const r of this.routes) {
      const params = matchSegments(r.segments, parts);
      if (!params) continue;
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { handler: refusing(params) ?? r.handler, params };
      allowed.push(r.method);
    }
    return allowed.length ? { allowed } : { notFound: true };
  }
}

/** A handler answering 400 for the first path parameter that is no clean name, or undefined. */
function refusing(params: Record<string, string>): RouteHandler | undefined {
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
