/**
 * The published contracts: GET /openapi.json (every HTTP route of this edge), GET /asyncapi.json
 * (every bus subject, under the configured prefix) and GET /api-docs, a page that renders the
 * OpenAPI document in the browser with our own script (no CDN; the pages' strict CSP). Both
 * documents are made once, at the first request, when every route is registered.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import { asyncApiDocument } from '../../contracts/asyncapi.js';
import { openApiDocument } from '../../contracts/openapi.js';
import { SECURITY_HEADERS } from '../reply.js';
import type { Router } from '../router.js';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');

/** the docs page runs our script only, talks to this origin only, and is framed by nobody */
const DOCS_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The name the contracts are published under (the API is Cortado's whatever app.name says). */
export const CONTRACT_TITLE = 'Cortado';

export function contractRoutes(router: Router, opts: { version: string; prefix: string }): void {
  let openapi: string | undefined;
  let asyncapi: string | undefined;
  const json = (body: string, rid: string): [Record<string, string>, string] => [{
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-cache',
    [HTTP_REQUEST_ID]: rid,
    ...SECURITY_HEADERS,
  }, body];

  router.get('/openapi.json', { auth: 'none', summary: 'This API as an OpenAPI 3.1 document', produces: 'application/json' }, (_req, res, ctx) => {
    openapi ??= JSON.stringify(openApiDocument(router.table(), { title: CONTRACT_TITLE, version: opts.version }));
    res.send(200, ...json(openapi, ctx.rid));
  });
  router.get('/asyncapi.json', { auth: 'none', summary: 'The bus subjects and events as an AsyncAPI 3 document', produces: 'application/json' }, (_req, res, ctx) => {
    asyncapi ??= JSON.stringify(asyncApiDocument({ title: CONTRACT_TITLE, version: opts.version, prefix: opts.prefix }));
    res.send(200, ...json(asyncapi, ctx.rid));
  });
  let page: string | undefined;
  router.get('/api-docs', { auth: 'none', summary: 'The HTTP API, rendered from /openapi.json', produces: 'text/html' }, (_req, res, ctx) => {
    try {
      page ??= readFileSync(path.join(WEB, 'api-docs.html'), 'utf8');
    } catch {
      throw new CortadoError('NOT_FOUND', 'page api-docs.html is missing');
    }
    res.send(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', 'content-security-policy': DOCS_CSP, [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS }, page);
  });
}
