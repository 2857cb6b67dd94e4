/**
 * The semantic layer's HTTP API (/api/semantic/*; SPEC.md "Endpoints → Semantic layer"). The edge
 * only translates: each route is one request to the semantic actor, which validates, stores and
 * announces the change.
 *
 * Who: every write and discover need the admin session (`auth: 'admin'`, with the CSRF header);
 * reads take the admin session or what the legacy `any` routes take (`auth: 'admin_or_any'`:
 * the assistant session, an API token, or an anonymous widget unless query.require_session).
 *
 * Path ids are positive integers (else 400, before the bus is asked). POST creates (201 with the
 * record); PUT takes the create body's required fields and changes what it sends (fields it
 * omits are kept, as with PATCH); PATCH takes any subset. Fields a body holds that the schema
 * does not name are ignored (a record read with GET can be sent back with PUT).
 */
import { Compile } from 'typebox/compile';
import type { Bus, Ctx } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import {
  BODY_TEXT, SemanticColumnBody, SemanticColumnPatchBody, SemanticDiscoverBody, SemanticEntityBody, SemanticEntityPatchBody, SemanticEntityPutBody,
  SemanticMetricBody, SemanticMetricPatchBody, SemanticRelationshipBody, SemanticRelationshipPatchBody,
} from '../../../protocol/schemas/http.js';
import type { ColumnPatch, ContextRequest, EntityListRequest, MetricPatch, RelationshipPatch } from '../../../protocol/schemas/semantic.js';
import { textProblem } from '../../../protocol/schemas/text.js';
import * as S from '../../../protocol/subjects.js';
import { callerCtx } from '../../caller.js';
import { readJson, sendJson } from '../reply.js';
import type { Router, RouteContext, RouteDoc } from '../router.js';
import type { HttpRequest, HttpResponse } from '../server.js';

const checkEntity = Compile(SemanticEntityBody);
const checkEntityPut = Compile(SemanticEntityPutBody);
const checkEntityPatch = Compile(SemanticEntityPatchBody);
const checkColumn = Compile(SemanticColumnBody);
const checkColumnPatch = Compile(SemanticColumnPatchBody);
const checkRelationship = Compile(SemanticRelationshipBody);
const checkRelationshipPatch = Compile(SemanticRelationshipPatchBody);
const checkMetric = Compile(SemanticMetricBody);
const checkMetricPatch = Compile(SemanticMetricPatchBody);
const checkDiscover = Compile(SemanticDiscoverBody);

const BASE = '/api/semantic';
/** the largest id (PostgreSQL's integer) */
const MAX_ID = 2_147_483_647;
/** the longest catalog / schema name a listing filters by (the bus schema's limit) */
const MAX_NAME = 256;
/** the longest question GET /api/semantic/context takes */
const MAX_QUESTION = 4000;

export interface SemanticRouteDeps {
  bus: Bus;
}

/** A path id: a positive integer, else 400 naming the parameter (never a 404 or a 500). */
function pathId(req: HttpRequest, name: string): number {
  const raw = req.params[name] ?? '';
  const n = /^[0-9]{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_ID) {
    throw new CortadoError('VALIDATION_FAILED', `path parameter ${name}: a positive integer (1 to ${MAX_ID})`, { errors: [{ path: `:${name}`, message: 'a positive integer' }] });
  }
  return n;
}

/** An optional query parameter that is a name of at most `max` characters. */
function queryName(req: HttpRequest, key: string, max: number, kind: 'name' | 'text' = 'name'): string | undefined {
  const v = req.query.get(key);
  if (v === null) return undefined;
  if (v.length > max) throw new CortadoError('VALIDATION_FAILED', `${key}: at most ${max} characters`);
  const problem = textProblem(v, kind);
  if (problem) throw new CortadoError('VALIDATION_FAILED', `${key}: ${problem}`);
  return v;
}

/** ?active_only: true/false/1/0; true when absent. */
function activeOnly(req: HttpRequest): boolean {
  const v = req.query.get('active_only');
  if (v === null || v === '') return true;
  switch (v.toLowerCase()) {
    case 'true': case '1': return true;
    case 'false': case '0': return false;
  }
  throw new CortadoError('VALIDATION_FAILED', 'active_only: true or false (or 1 or 0)');
}

type Read = (req: HttpRequest, res: HttpResponse, ctx: RouteContext<'admin_or_any'>, bctx: Ctx) => Promise<void>;
type Write = (req: HttpRequest, res: HttpResponse, ctx: RouteContext<'admin'>, bctx: Ctx & { user: string }) => Promise<void>;

export function semanticRoutes(router: Router, deps: SemanticRouteDeps): void {
  const { bus } = deps;

  /** A read: the admin session or the legacy callers; the bus context carries the caller's user and scope. */
  function read(path: string, fn: Read): void;
  function read(path: string, doc: RouteDoc, fn: Read): void;
  function read(path: string, docOrFn: RouteDoc | Read, last?: Read): void {
    const fn = typeof docOrFn === 'function' ? docOrFn : last!;
    const doc = typeof docOrFn === 'function' ? {} : docOrFn;
    router.add('GET', `${BASE}${path}`, { ...doc, auth: 'admin_or_any' }, async (req, res, ctx) => {
      await fn(req, res, ctx, callerCtx(ctx.rid, await ctx.caller()));
    });
  }
  /** A write: the admin session (CSRF-checked); `by` of the bus request is the admin. */
  function write(method: string, path: string, fn: Write): void;
  function write(method: string, path: string, doc: RouteDoc, fn: Write): void;
  function write(method: string, path: string, docOrFn: RouteDoc | Write, last?: Write): void {
    const fn = typeof docOrFn === 'function' ? docOrFn : last!;
    const doc = typeof docOrFn === 'function' ? {} : docOrFn;
    router.add(method, `${BASE}${path}`, { ...doc, auth: 'admin' }, async (req, res, ctx) => {
      const { user } = await ctx.caller();
      await fn(req, res, ctx, { requestId: ctx.rid, user });
    });
  }

  // ---- entities ----
  read('/entities', { summary: 'Semantic entities', reply: S.SemanticEntityList.reply }, async (req, res, ctx, b) => {
    const filter: EntityListRequest = {};
    const catalog = queryName(req, 'catalog', MAX_NAME);
    const schema = queryName(req, 'schema_name', MAX_NAME);
    if (catalog !== undefined) filter.catalog = catalog;
    if (schema !== undefined) filter.schema_name = schema;
    sendJson(res, 200, await bus.request(S.SemanticEntityList, filter, b), ctx.rid);
  });
  write('POST', '/entities', { summary: 'Create an entity (with its columns)', body: SemanticEntityBody, status: 201, reply: S.SemanticEntityCreate.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkEntity, { text: BODY_TEXT.semanticEntity, fields: 'strip' });
    sendJson(res, 201, await bus.request(S.SemanticEntityCreate, { ...body, by: b.user }, b), ctx.rid);
  });
  read('/entities/:id', { summary: 'One entity', reply: S.SemanticEntityGet.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticEntityGet, { id: pathId(req, 'id') }, b), ctx.rid);
  });
  write('PUT', '/entities/:id', { summary: 'Change an entity', body: SemanticEntityPutBody, reply: S.SemanticEntityUpdate.reply }, async (req, res, ctx, b) => {
    const id = pathId(req, 'id');
    const body = await readJson(req, checkEntityPut, { text: BODY_TEXT.semanticEntity, fields: 'strip' });
    sendJson(res, 200, await bus.request(S.SemanticEntityUpdate, { ...body, id, by: b.user }, b), ctx.rid);
  });
  write('PATCH', '/entities/:id', { summary: 'Change some fields of an entity', body: SemanticEntityPatchBody, reply: S.SemanticEntityUpdate.reply }, async (req, res, ctx, b) => {
    const id = pathId(req, 'id');
    const body = await readJson(req, checkEntityPatch, { text: BODY_TEXT.semanticEntity, fields: 'strip' });
    sendJson(res, 200, await bus.request(S.SemanticEntityUpdate, { ...body, id, by: b.user }, b), ctx.rid);
  });
  write('DELETE', '/entities/:id', { summary: 'Delete an entity', reply: S.SemanticEntityDelete.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticEntityDelete, { id: pathId(req, 'id'), by: b.user }, b), ctx.rid);
  });

  // ---- columns of an entity ----
  write('POST', '/entities/:id/columns', { summary: 'Add a column to an entity', body: SemanticColumnBody, status: 201, reply: S.SemanticColumnAdd.reply }, async (req, res, ctx, b) => {
    const entityId = pathId(req, 'id');
    const body = await readJson(req, checkColumn, { text: BODY_TEXT.semanticColumn, fields: 'strip' });
    sendJson(res, 201, await bus.request(S.SemanticColumnAdd, { ...body, entity_id: entityId, by: b.user }, b), ctx.rid);
  });
  for (const method of ['PUT', 'PATCH'] as const) {
    write(method, '/entities/:id/columns/:column_id', async (req, res, ctx, b) => {
      const entityId = pathId(req, 'id');
      const id = pathId(req, 'column_id');
      const body: ColumnPatch = method === 'PUT'
        ? await readJson(req, checkColumn, { text: BODY_TEXT.semanticColumn, fields: 'strip' })
        : await readJson(req, checkColumnPatch, { text: BODY_TEXT.semanticColumn, fields: 'strip' });
      sendJson(res, 200, await bus.request(S.SemanticColumnUpdate, { ...body, entity_id: entityId, id, by: b.user }, b), ctx.rid);
    });
  }
  write('DELETE', '/entities/:id/columns/:column_id', { summary: 'Delete a column', reply: S.SemanticColumnDelete.reply }, async (req, res, ctx, b) => {
    const entityId = pathId(req, 'id');
    const id = pathId(req, 'column_id');
    sendJson(res, 200, await bus.request(S.SemanticColumnDelete, { entity_id: entityId, id, by: b.user }, b), ctx.rid);
  });

  // ---- relationships ----
  read('/relationships', { summary: 'Relationships', reply: S.SemanticRelationshipList.reply }, async (_req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticRelationshipList, {}, b), ctx.rid);
  });
  write('POST', '/relationships', { summary: 'Create a relationship', body: SemanticRelationshipBody, status: 201, reply: S.SemanticRelationshipCreate.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkRelationship, { text: BODY_TEXT.semanticRelationship, fields: 'strip' });
    sendJson(res, 201, await bus.request(S.SemanticRelationshipCreate, { ...body, by: b.user }, b), ctx.rid);
  });
  read('/relationships/:id', { summary: 'One relationship', reply: S.SemanticRelationshipGet.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticRelationshipGet, { id: pathId(req, 'id') }, b), ctx.rid);
  });
  for (const method of ['PUT', 'PATCH'] as const) {
    write(method, '/relationships/:id', async (req, res, ctx, b) => {
      const id = pathId(req, 'id');
      const body: RelationshipPatch = method === 'PUT'
        ? await readJson(req, checkRelationship, { text: BODY_TEXT.semanticRelationship, fields: 'strip' })
        : await readJson(req, checkRelationshipPatch, { text: BODY_TEXT.semanticRelationship, fields: 'strip' });
      sendJson(res, 200, await bus.request(S.SemanticRelationshipUpdate, { ...body, id, by: b.user }, b), ctx.rid);
    });
  }
  write('DELETE', '/relationships/:id', { summary: 'Delete a relationship', reply: S.SemanticRelationshipDelete.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticRelationshipDelete, { id: pathId(req, 'id'), by: b.user }, b), ctx.rid);
  });

  // ---- metrics ----
  read('/metrics', { summary: 'Metrics', reply: S.SemanticMetricList.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticMetricList, { active_only: activeOnly(req) }, b), ctx.rid);
  });
  write('POST', '/metrics', { summary: 'Create a metric', body: SemanticMetricBody, status: 201, reply: S.SemanticMetricCreate.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkMetric, { text: BODY_TEXT.semanticMetric, fields: 'strip' });
    sendJson(res, 201, await bus.request(S.SemanticMetricCreate, { ...body, by: b.user }, b), ctx.rid);
  });
  read('/metrics/:id', { summary: 'One metric', reply: S.SemanticMetricGet.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticMetricGet, { id: pathId(req, 'id') }, b), ctx.rid);
  });
  for (const method of ['PUT', 'PATCH'] as const) {
    write(method, '/metrics/:id', async (req, res, ctx, b) => {
      const id = pathId(req, 'id');
      const body: MetricPatch = method === 'PUT'
        ? await readJson(req, checkMetric, { text: BODY_TEXT.semanticMetric, fields: 'strip' })
        : await readJson(req, checkMetricPatch, { text: BODY_TEXT.semanticMetric, fields: 'strip' });
      sendJson(res, 200, await bus.request(S.SemanticMetricUpdate, { ...body, id, by: b.user }, b), ctx.rid);
    });
  }
  for (const [verb, active] of [['activate', true], ['deactivate', false]] as const) {
    write('POST', `/metrics/:id/${verb}`, async (req, res, ctx, b) => {
      sendJson(res, 200, await bus.request(S.SemanticMetricUpdate, { id: pathId(req, 'id'), active, by: b.user }, b), ctx.rid);
    });
  }
  write('DELETE', '/metrics/:id', { summary: 'Delete a metric', reply: S.SemanticMetricDelete.reply }, async (req, res, ctx, b) => {
    sendJson(res, 200, await bus.request(S.SemanticMetricDelete, { id: pathId(req, 'id'), by: b.user }, b), ctx.rid);
  });

  // ---- the context as the model reads it, and discovery ----
  read('/context', { summary: 'The semantic context a question gets', reply: S.SemanticContext.reply }, async (req, res, ctx, b) => {
    const question = queryName(req, 'question', MAX_QUESTION, 'text');
    const request: ContextRequest = question === undefined ? {} : { question };
    sendJson(res, 200, await bus.request(S.SemanticContext, request, b), ctx.rid);
  });
  write('POST', '/discover', { summary: 'Propose entities, columns and relationships from the schema', body: SemanticDiscoverBody, reply: S.SemanticDiscover.reply }, async (req, res, ctx, b) => {
    const body = await readJson(req, checkDiscover, { fields: 'strip' });
    sendJson(res, 200, await bus.request(S.SemanticDiscover, body, b), ctx.rid);
  });
}
