/**
 * GET /widget.js: the embeddable widgets (the Assistant on /query, the Authenticated Agent on
 * /auth/*) as ONE classic script a foreign page loads with one tag (docs/ui.md "Widgets").
 *
 * It is bundled from edge/web/static/widget/index.js and the answer modules it imports
 * (edge/web/static/answer/) by esbuild, once per process, on the first request (minified IIFE,
 * kept in memory). Chart.js is not in it: the answer view loads /vendor/chart.umd.min.js from
 * the widget's own origin when the first question is asked. esbuild is a dependency of its own
 * (package.json, pinned; its binary comes in the @esbuild/<platform> package, so no install script
 * is needed). When it cannot be loaded or the bundle does not build, the route answers 503 saying
 * why, and tries again on the next request.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import type { Logger } from '../../../runtime/log.js';
import { SECURITY_HEADERS } from '../reply.js';
import type { Router } from '../router.js';

const ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/static/widget/index.js');

export interface WidgetBundle {
  code: Buffer;
  /** its size gzipped (the budget: 150 KB), logged once */
  gzipBytes: number;
}

/** Bundle the widget entry with esbuild (a minified IIFE), or throw a CortadoError that says why not. */
export async function buildWidget(entry: string = ENTRY): Promise<WidgetBundle> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch (err) {
    throw new CortadoError('ACTOR_UNAVAILABLE', `the widget script cannot be built here: esbuild is not installed (${(err as Error).message.slice(0, 200)})`);
  }
  try {
    const out = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      format: 'iife',
      minify: true,
      target: ['es2020'],
      platform: 'browser',
      write: false,
      legalComments: 'none',
      logLevel: 'silent',
    });
    const file = out.outputFiles[0];
    if (!file) throw new Error('esbuild wrote no file');
    const code = Buffer.from(file.contents);
    return { code, gzipBytes: gzipSync(code, { level: 9 }).length };
  } catch (err) {
    const e = err as { errors?: Array<{ text: string; location?: { file: string; line: number } | null }>; message?: string };
    const first = e.errors?.[0];
    const why = first ? `${first.text}${first.location ? ` (${path.basename(first.location.file)}:${first.location.line})` : ''}` : (e.message ?? String(err));
    throw new CortadoError('ACTOR_UNAVAILABLE', `the widget script did not build: ${why.slice(0, 300)}`);
  }
}

export function widgetRoutes(router: Router, deps: { log: Logger }): void {
  let bundle: Promise<WidgetBundle> | undefined;
  const get = (): Promise<WidgetBundle> => {
    bundle ??= buildWidget().then(
      (b) => {
        deps.log.info({ bytes: b.code.length, gzip_bytes: b.gzipBytes }, 'widget script built');
        return b;
      },
      (err: unknown) => {
        bundle = undefined; // the next request tries again (a missing module may have arrived)
        throw err;
      },
    );
    return bundle;
  };

  router.get('/widget.js', { auth: 'none' }, async (_req, res, ctx) => {
    const b = await get();
    res.send(200, {
      'content-type': 'text/javascript; charset=utf-8',
      'cache-control': 'public, max-age=300',
      // a page on any site may load it (a classic <script> needs no CORS; this covers crossorigin="anonymous")
      'cross-origin-resource-policy': 'cross-origin',
      [HTTP_REQUEST_ID]: ctx.rid,
      ...SECURITY_HEADERS,
    }, b.code);
  });
}
