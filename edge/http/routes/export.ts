/**
 * POST /api/export — "download this result": the SQL of an answer the caller was shown, as a
 * csv, xlsx or html file (sql.export), sent back as an attachment.
 *
 * Who (`auth: 'signed_in'`, edge/caller.ts): the admin session, the assistant session, a
 * plugins.auth session or an API token; an anonymous widget gets 401. The SQL runs exactly as
 * an answer's does: through the executor's guard (one read-only statement on the dialect's
 * allow-list, the catalog lock), in the caller's own database scope (a token's or an auth
 * session's db_config), read-only, with the mask rules applied to every page, at most
 * export.max_rows rows. A file over export.max_file_size_mb is LIMIT_EXCEEDED (422).
 */
import { Compile } from 'typebox/compile';
import type { Bus } from '../../../runtime/bus.js';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import { EXPORT_TTL_MS } from '../../../protocol/schemas/export.js';
import { BODY_TEXT, ExportBody } from '../../../protocol/schemas/http.js';
import { Bucket, SqlExport } from '../../../protocol/subjects.js';
import type { Config } from '../../../config/schema.js';
import { callerCtx } from '../../caller.js';
import { readJson, SECURITY_HEADERS } from '../reply.js';
import type { Router } from '../router.js';

const checkExport = Compile(ExportBody);

export interface ExportRouteDeps {
  bus: Bus;
  config: Config;
}

/** `attachment; filename="…"; filename*=UTF-8''…` for a name already made safe by the executor. */
function disposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export function exportRoutes(router: Router, deps: ExportRouteDeps): void {
  const { bus, config } = deps;
  let opening: ReturnType<Bus['objects']> | undefined;
  const objects = (): ReturnType<Bus['objects']> => {
    opening ??= bus.objects(Bucket.Exports, { ttlMs: EXPORT_TTL_MS }).catch((err: unknown) => {
      opening = undefined;
      throw err;
    });
    return opening;
  };

  router.post('/api/export', { auth: 'signed_in', summary: 'A result as a file (csv, excel, html), masked', body: ExportBody, produces: 'application/octet-stream' }, async (req, res, ctx) => {
    const caller = await ctx.caller();
    const body = await readJson(req, checkExport, { text: BODY_TEXT.export });
    const bctx = callerCtx(ctx.rid, caller);
    const r = await bus.request(SqlExport, { sql: body.sql, format: body.format, title: body.title ?? 'Cortado export' }, bctx);
    if (r.too_large || !r.object) {
      throw new CortadoError('LIMIT_EXCEEDED', `the file would be larger than export.max_file_size_mb (${config.export.max_file_size_mb} MB); ask for fewer rows or columns`, {
        limit: 'max_file_size_mb', max: config.export.max_file_size_mb,
      });
    }
    const store = await objects();
    const got = await store.getBytes(r.object, config.export.max_file_size_mb * 1024 * 1024 + 1);
    if (!got) throw new CortadoError('NOT_FOUND', 'the export file expired before it could be sent; try again');
    // a download is fetched once: the stored copy is not needed after it
    void store.delete(r.object);
    res.send(200, {
      'content-type': r.content_type,
      'content-disposition': disposition(r.filename),
      'cache-control': 'no-store',
      'x-cortado-rows': String(r.rows),
      'x-cortado-truncated': String(r.truncated),
      [HTTP_REQUEST_ID]: ctx.rid,
      ...SECURITY_HEADERS,
    }, got.data);
  });
}
