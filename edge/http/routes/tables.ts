/** GET /api/tables, GET /api/tables/{name}, and the legacy GET /tables. */
import type { Bus } from '../../../protocol/bus.js';
import { SchemaDescribe, SchemaTables } from '../../../protocol/subjects.js';
import { sendJson } from '../reply.js';
import type { Router } from '../router.js';
import { SchemaDescribeReply, SchemaTablesReply } from '../../../protocol/schemas/catalog.js';

export function tableRoutes(router: Router, deps: { bus: Bus }): void {
  router.get('/api/tables', { auth: 'none', summary: 'The tables Cortado may query', reply: SchemaTablesReply }, async (req, res, ctx) => {
    const refresh = req.query.get('refresh') === 'true';
    const reply = await deps.bus.request(SchemaTables, refresh ? { refresh } : {}, { requestId: ctx.rid });
    sendJson(res, 200, reply, ctx.rid);
  });

  router.get('/api/tables/:name', { auth: 'none', summary: 'One table\'s columns', reply: SchemaDescribeReply }, async (req, res, ctx) => {
    const table = req.params.name ?? '';
    const reply = await deps.bus.request(SchemaDescribe, { table }, { requestId: ctx.rid });
    sendJson(res, 200, reply, ctx.rid);
  });

  router.get('/tables', { auth: 'none', summary: 'Table names, SQLatte-compatible' }, async (_req, res, ctx) => {
    const reply = await deps.bus.request(SchemaTables, {}, { requestId: ctx.rid });
    sendJson(res, 200, { tables: reply.tables.map((t) => t.name) }, ctx.rid);
  });
}
