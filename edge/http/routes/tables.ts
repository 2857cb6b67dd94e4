/**
 * GET /api/tables, GET /api/tables/{name}, and the legacy GET /tables: anyone's, on the server's
 * own connection — while plugins.auth.require_login is on, a signed-in caller's, in its scope.
 */
import type { Bus } from '../../../runtime/bus.js';
import { callerCtx } from '../../caller.js';
import { SchemaDescribe, SchemaTables } from '../../../protocol/subjects.js';
import { sendJson } from '../reply.js';
import type { Router } from '../router.js';
import { SchemaDescribeReply, SchemaTablesReply } from '../../../protocol/schemas/catalog.js';

export function tableRoutes(router: Router, deps: { bus: Bus }): void {
  router.get('/api/tables', { auth: 'open', summary: 'The tables Cortado may query', reply: SchemaTablesReply }, async (req, res, ctx) => {
    const refresh = req.query.get('refresh') === 'true';
    const reply = await deps.bus.request(SchemaTables, refresh ? { refresh } : {}, callerCtx(ctx.rid, await ctx.caller()));
    sendJson(res, 200, reply, ctx.rid);
  });

  router.get('/api/tables/:name', { auth: 'open', summary: 'One table\'s columns', reply: SchemaDescribeReply }, async (req, res, ctx) => {
    const table = req.params.name ?? '';
    const reply = await deps.bus.request(SchemaDescribe, { table }, callerCtx(ctx.rid, await ctx.caller()));
    sendJson(res, 200, reply, ctx.rid);
  });

  router.get('/tables', { auth: 'open', summary: 'Table names, SQLatte-compatible' }, async (_req, res, ctx) => {
    const reply = await deps.bus.request(SchemaTables, {}, callerCtx(ctx.rid, await ctx.caller()));
    sendJson(res, 200, { tables: reply.tables.map((t) => t.name) }, ctx.rid);
  });
}
