/** The browser pages and their static files, read once at start. */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CortadoError } from '../../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../../protocol/headers.js';
import type { Config } from '../../../config/schema.js';
import { SECURITY_HEADERS, sendJson } from '../reply.js';
import type { Router } from '../router.js';

const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

const PAGE_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'self'";

/**
 * Browser libraries served from their npm packages (pinned in package.json), never from a CDN:
 * the URL path under /vendor/ → the package and the file beside its entry point.
 */
const VENDOR: Record<string, { pkg: string; file: string }> = {
  'chart.umd.min.js': { pkg: 'chart.js', file: 'chart.umd.min.js' },
};

function loadVendor(): Map<string, Buffer> {
  const require = createRequire(import.meta.url);
  const files = new Map<string, Buffer>();
  for (const [name, { pkg, file }] of Object.entries(VENDOR)) {
    try {
      files.set(name, readFileSync(path.join(path.dirname(require.resolve(pkg)), file)));
    } catch {
      // not installed: its route answers 404 and the page says the charts are unavailable
    }
  }
  return files;
}

function loadDir(dir: string, prefix = ''): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return files;
  }
  for (const name of names) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) for (const [k, v] of loadDir(full, `${prefix}${name}/`)) files.set(k, v);
    else files.set(`${prefix}${name}`, readFileSync(full));
  }
  return files;
}

/**
 * What the pages need to know before they draw: which tabs of the dashboard to show
 * (ui.sections, read at each request so a runtime override applies), which features are on
 * here, and which sign-ins exist. The dashboard shows a tab when its section is not false, whether
 * or not its feature is on (SPEC); a feature that is off is said on its tab to an administrator
 * (docs/ui.md "Dashboard"). No host, no secret.
 *
 * The features, per tab: the question API, dashboards and the demo page are always there; the
 * schedules API is always there (`scheduler.enabled` only says whether schedules fire on their
 * cron, `scheduler_fires`); analytics when `analytics.enabled`; the warehouse ops console when
 * `ops_agent.enabled`; Tokens when `plugins.auth.enabled`; the admin panel when `admin.enabled`.
 */
export function uiConfigView(config: Config): Record<string, unknown> {
  const s = config.ui.sections;
  return {
    app_name: config.app.name,
    sections: {
      assistant: s.assistant, demo: s.demo, analytics: s.analytics, schedules: s.schedules, dashboards: s.dashboards,
      bigquery_ops: s.bigquery_ops ?? s['bigquery-ops'] ?? true, admin: s.admin, tokens: s.tokens,
    },
    features: {
      assistant: true, dashboards: true, demo: true, schedules: true,
      analytics: config.analytics.enabled, bigquery_ops: config.ops_agent.enabled,
      tokens: config.plugins.auth.enabled, admin: config.admin.enabled,
    },
    scheduler_fires: config.scheduler.enabled,
    sign_in: { assistant_login: config.plugins.assistant_login.enabled, auth: config.plugins.auth.enabled },
  };
}

export function pageRoutes(router: Router, opts: { appName: string; config?: Config }): void {
  const files = loadDir(WEB);
  const page = (file: string) => {
    const html = files.get(file)?.toString('utf8').replaceAll('{{app_name}}', escapeHtml(opts.appName));
    return (_req: unknown, res: import('../server.js').HttpResponse, ctx: { rid: string }) => {
      if (html === undefined) throw new CortadoError('NOT_FOUND', `page ${file} is missing`);
      res.send(200, { 'content-type': TYPES['.html']!, 'cache-control': 'no-cache', 'content-security-policy': PAGE_CSP, [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS }, html);
    };
  };
  router.get('/', { auth: 'none', summary: 'The assistant page', produces: 'text/html' }, page('index.html'));
  const { config } = opts;
  if (config) router.get('/ui/config', { auth: 'none', summary: 'What the pages show (sections, the features on, sign-ins); no secret' }, (_req, res, ctx) => sendJson(res, 200, uiConfigView(config), ctx.rid));
  router.get('/admin', { auth: 'none', summary: 'The admin panel page', produces: 'text/html' }, page('admin.html'));
  // the page signs in through /admin/login itself; its data (/api/analytics/*) is what is guarded
  router.get('/analytics', { auth: 'none', summary: 'The analytics page', produces: 'text/html' }, page('analytics.html'));
  // the warehouse operations console (the dashboard's bigquery_ops tab); its data (/api/ops/*) is what is guarded
  router.get('/ops', { auth: 'none', summary: 'The warehouse operations console page', produces: 'text/html' }, page('ops.html'));
  // the widgets embedded in a sample host page (docs/ui.md "Widgets"); ui.sections.demo off: no such page
  const demo = page('demo.html');
  router.get('/demo', { auth: 'none' }, (req, res, ctx) => {
    if (config && !config.ui.sections.demo) throw new CortadoError('NOT_FOUND', 'the demo page is off (ui.sections.demo is false)');
    return demo(req, res, ctx);
  });
  // The scripts are ES modules that import one another by unversioned URLs: a browser that kept
  // some for minutes after an upgrade would run old and new modules together (an import of a name
  // that moved fails the whole page). So each file is revalidated on every use, by its ETag (a
  // 304 with no body when unchanged), rather than cached for a fixed time.
  const etags = new Map([...files].map(([name, body]) => [name, `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`]));
  router.get('/static/*', { auth: 'none', summary: 'The pages\' scripts, styles and images', produces: 'application/octet-stream' }, (req, res, ctx) => {
    const rel = req.params['*'] ?? '';
    const body = rel.includes('..') ? undefined : files.get(`static/${rel}`);
    if (!body) throw new CortadoError('NOT_FOUND', `no static file ${rel}`);
    const etag = etags.get(`static/${rel}`)!;
    const headers = { 'cache-control': 'no-cache', etag, [HTTP_REQUEST_ID]: ctx.rid, ...SECURITY_HEADERS };
    if (req.headers['if-none-match']?.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) {
      res.send(304, headers);
      return;
    }
    res.send(200, { 'content-type': TYPES[path.extname(rel)] ?? 'application/octet-stream', ...headers }, body);
  });
  const vendor = loadVendor();
  router.get('/vendor/:file', { auth: 'none', summary: 'Browser libraries served from their npm packages', produces: 'text/javascript' }, (req, res, ctx) => {
    const body = vendor.get(req.params.file ?? '');
    if (!body) throw new CortadoError('NOT_FOUND', `no vendor file ${req.params.file ?? ''}`);
    res.send(200, {
      'content-type': TYPES['.js']!,
      'cache-control': 'public, max-age=3600',
      [HTTP_REQUEST_ID]: ctx.rid,
      ...SECURITY_HEADERS,
    }, body);
  });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
