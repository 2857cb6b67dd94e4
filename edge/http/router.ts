/** Method + path patterns (`/api/tables/:name`) → handlers; 404 and 405 told apart. */
import type { Logger } from '../../protocol/log.js';
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
      if (r.method === method || (method === 'HEAD' && r.method === 'GET')) return { handler: r.handler, params };
      allowed.push(r.method);
    }
    return allowed.length ? { allowed } : { notFound: true };
  }
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
