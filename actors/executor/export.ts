/**
 * sql.export: one guarded, read-only query written to a file (csv, excel, html) and stored in
 * the exports Object Store bucket, for scheduled reports and the browser's download.
 *
 * - The SQL goes through the same guard and catalog lock as sql.execute, in the caller's scope
 *   (ctx.scope: a schedule runs in its creator's), with export.max_rows (+1, to tell a cut
 *   result from one of exactly max_rows rows) as its row limit.
 * - Rows go to the writer a page at a time (PAGE_ROWS), each page masked on the way, here
 *   (lib/masking/, with the caller's rules or the store's; the lineage read once, from the
 *   guard's parse where the dialect allows), so the writer and the masking never hold the whole
 *   result. The server's own PostgreSQL is read from a server-side cursor (export-pg.ts), a page
 *   per FETCH, so nothing holds the whole result. MySQL/MariaDB, Trino and BigQuery have a
 *   `pages` of their own (duck-typed below: rows read as they arrive with the connection
 *   paused between pages; the coordinator's nextUri pages; one getQueryResults page each),
 *   also in a scope, and are read page by page the same way; so is a plugins.auth scope's own
 *   PostgreSQL (a cursor on one of its pool's connections, PostgresEngine.pages). Only the
 *   embedded demo database answers one statement with its rows (bounded by the LIMIT and
 *   query.max_result_mb on the wire): that result is read whole and paged from there.
 * - A plugins.auth scope's own connection holds one of plugins.auth.max_workers' slots for the
 *   whole export, as sql.execute does (handle.ts inSlot); the wait for a slot comes off the
 *   timeout, and a slot not free within it is DB_TIMEOUT (reason max_workers).
 * - The file is written to a temporary file, then stored in chunks (bus.objects); one over
 *   export.max_file_size_mb is not stored (`too_large`), which the e-mail or the download says.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Bus, ObjectBucket } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Cell, Column } from '../../protocol/schemas/common.js';
import type { SqlExportReply, SqlExportRequest } from '../../protocol/schemas/export.js';
import { Bucket, SqlExport } from '../../protocol/subjects.js';
import { CONTENT_TYPE, EXPORT_TTL_MS, exportFilename, writeExport, type Page } from '../lib/export/index.js';
import { localParts } from '../lib/mail/template.js';
import type { EngineResult, ExecuteOptions } from './engines/engine.js';
import { capsFromConfig } from './engines/wire-cap.js';
import { guardIsolated } from './guard/isolated.js';
import { inSlot, leaseFor, queryTimeoutMs, rulesFor, type ExecutorDeps } from './handle.js';
import { lineageQuery } from '../lib/masking/isolated.js';
import { OPAQUE_QUERY } from '../lib/masking/lineage.js';
import { maskCounted } from '../lib/masking/service.js';
import { sanitizeDbError } from './sanitize.js';
import { cursorAvailable, pgCursorPages } from './export-pg.js';

/** rows per page: what the writer and the masking take at a time */
export const PAGE_ROWS = 1_000;

/** An engine that can read a result page by page from a server-side cursor. */
interface PagedEngine {
  pages(sql: string, opts: ExecuteOptions & { pageRows: number }): AsyncIterable<EngineResult>;
}

function hasPages(engine: unknown): engine is PagedEngine {
  return typeof (engine as Partial<PagedEngine>).pages === 'function';
}

export interface ExportDeps extends ExecutorDeps {
  bus: Pick<Bus, 'publish' | 'request'>;
  /** the exports bucket, opened once (bus.objects(Bucket.Exports)) */
  objects: () => Promise<ObjectBucket>;
}

/** Open the exports bucket on first use, once. */
export function exportsBucket(bus: Pick<Bus, 'objects'>): () => Promise<ObjectBucket> {
  let opening: Promise<ObjectBucket> | undefined;
  return () => {
    opening ??= bus.objects(Bucket.Exports, { ttlMs: EXPORT_TTL_MS }).catch((err: unknown) => {
      opening = undefined;
      throw new CortadoError('INTERNAL', `cannot store the export: JetStream's object store is not available (${(err as Error).message})`);
    });
    return opening;
  };
}

export async function exportSql(input: SqlExportRequest, deps: ExportDeps, ctx: Ctx): Promise<SqlExportReply> {
  const started = performance.now();
  const { config, log } = deps;
  if (!config.export.formats.includes(input.format)) {
    throw new CortadoError('VALIDATION_FAILED', `format ${input.format} is not enabled (export.formats: ${config.export.formats.join(', ')})`);
  }
  const maxRows = Math.min(input.max_rows ?? config.export.max_rows, config.export.max_rows);
  const maxBytes = config.export.max_file_size_mb * 1024 * 1024;
  const at = input.at ? new Date(input.at) : new Date();
  if (Number.isNaN(at.getTime())) throw new CortadoError('VALIDATION_FAILED', 'at: not a date (ISO 8601)');
  const timeZone = input.timezone ?? 'UTC';
  let when: { date: string; time: string };
  try {
    when = localParts(at, timeZone);
  } catch {
    throw new CortadoError('VALIDATION_FAILED', `timezone: "${timeZone}" is not a known IANA time zone`);
  }
  const filename = exportFilename(config.export.filename_template, { schedule_name: input.title, date: when.date, time: when.time, format: input.format });

  // the store's rules always apply; a request may add rules, never take any away
  const rulesAsked = rulesFor(deps, ctx).then((stored) => (input.rules?.length ? [...stored, ...input.rules] : stored));
  rulesAsked.catch(() => undefined);
  const lease = await leaseFor(deps, ctx);
  const dir = await mkdtemp(path.join(tmpdir(), 'cortado-export-'));
  let ran: string | undefined;
  try {
    const { engine } = lease;
    // the guard and the catalog lock, in a worker (guard/isolated.ts)
    const rules = await rulesAsked;
    const { guarded, lineage } = await guardIsolated(input.sql, engine.dialect, {
      defaultLimit: maxRows + 1, maxLimit: maxRows + 1, allowedFunctions: config.database.allowed_functions, serverVersion: await engine.serverMajorVersion?.(),
    }, { ...(lease.lock ? { lock: lease.lock } : {}), ...(rules.length ? { lineage: true } : {}) });
    ran = guarded.runSql;
    if (!lease.scoped) await deps.ensureReadOnly?.();
    const opts: ExecuteOptions = {
      timeoutMs: queryTimeoutMs(input.timeout_ms, config, ctx),
      maxRows: maxRows + 1,
      ...capsFromConfig(config.query),
      ...(ctx.user ? { user: ctx.user } : {}),
    };
    const masked = new Set<string>();
    // the statement's lineage, read once for every page (the guard's, or the masking worker's)
    const query = rules.length === 0 ? OPAQUE_QUERY : (lineage ?? (await lineageQuery(guarded.sql, engine.dialect)));
    const maskPage = async (columns: Column[], rows: Cell[][]): Promise<Cell[][]> => {
      if (rows.length === 0) return rows;
      const r = await maskCounted({ sql: guarded.sql, dialect: engine.dialect, columns, rows, rules }, deps.masking, ctx, query);
      for (const m of r.masked) masked.add(m.column);
      return r.rows;
    };
    const cursor = !lease.scoped && engine.provider === 'postgresql' && cursorAvailable(config);
    async function* pages(): AsyncGenerator<Page> {
      if (cursor) {
        for await (const page of pgCursorPages(config, guarded.runSql, { timeoutMs: opts.timeoutMs, pageRows: PAGE_ROWS, log })) {
          yield { columns: page.columns, rows: await maskPage(page.columns, page.rows) };
        }
        return;
      }
      // the server's own PostgreSQL pages above; its embedded one (one connection) is read whole
      if (hasPages(engine) && (lease.scoped || engine.provider !== 'postgresql')) {
        for await (const page of engine.pages(guarded.runSql, { ...opts, pageRows: PAGE_ROWS })) {
          yield { columns: page.columns, rows: await maskPage(page.columns, page.rows) };
        }
        return;
      }
      const result = await engine.execute(guarded.runSql, opts);
      if (result.rows.length === 0) {
        yield { columns: result.columns, rows: [] };
        return;
      }
      for (let i = 0; i < result.rows.length; i += PAGE_ROWS) {
        const rows = result.rows.slice(i, i + PAGE_ROWS);
        // the page handed on: its part of the result is dropped as the writer goes
        result.rows.fill([] as Cell[], i, i + rows.length);
        yield { columns: result.columns, rows: await maskPage(result.columns, rows) };
      }
    }
    const file = path.join(dir, filename);
    // a scope's own connection takes a plugins.auth.max_workers slot for the whole read, as a query does (the wait comes off the timeout)
    const written = await inSlot(deps, lease, opts.timeoutMs, (timeoutMs) => {
      opts.timeoutMs = timeoutMs;
      return writeExport(pages(), {
        format: input.format, file, title: input.title,
        when: `${when.date} ${when.time} ${timeZone}`, maxRows, maxBytes,
      });
    });
    let object: string | undefined;
    if (!written.too_large) {
      object = `${randomUUID()}`;
      await (await deps.objects()).putFile(object, file, { filename, content_type: CONTENT_TYPE[input.format] });
    }
    const reply: SqlExportReply = {
      ...(object ? { object } : {}),
      filename,
      content_type: CONTENT_TYPE[input.format],
      bytes: written.bytes,
      rows: written.rows,
      truncated: written.truncated,
      too_large: written.too_large,
      columns: written.columns,
      sql: guarded.sql,
      masked: [...masked],
      duration_ms: Math.round(performance.now() - started),
    };
    log.info({
      rid: ctx.requestId, subj: SqlExport.subject, code: 'OK', ms: reply.duration_ms, format: input.format, read: cursor ? 'cursor' : hasPages(lease.engine) && (lease.scoped || lease.engine.provider !== 'postgresql') ? 'pages' : 'whole',
      rows: reply.rows, bytes: reply.bytes, truncated: reply.truncated, too_large: reply.too_large,
    }, 'export written');
    return reply;
  } catch (err) {
    const e = sanitizeDbError(toCortadoError(err), lease.engine.dialect, [input.sql, ran]);
    log.info({ rid: ctx.requestId, subj: SqlExport.subject, code: e.code, ms: Math.round(performance.now() - started) }, 'export failed');
    throw e;
  } finally {
    lease.release();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
