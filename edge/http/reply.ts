/** Writing answers and errors, and reading JSON bodies, the same way on every route. */
import type { StaticEncode, TSchema } from 'typebox';
import type { Validator } from 'typebox/compile';
import { describeErrors } from '../../protocol/define.js';
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import { HTTP_REQUEST_ID } from '../../protocol/headers.js';
import { FieldPolicy, stripUndeclared, undeclaredFields } from './fields.js';
import { checkText, type TextRules } from './json.js';
import type { HttpRequest, HttpResponse } from './server.js';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function sendJson(res: HttpResponse, status: number, body: unknown, rid: string, extra: Record<string, string> = {}): void {
  res.send(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    [HTTP_REQUEST_ID]: rid,
    ...SECURITY_HEADERS,
    ...extra,
  }, JSON.stringify(body));
}

/**
 * `{"error": {"code", "message", "retryable", "request_id"}}` with the code's HTTP status;
 * `retryable` (the code's flag, protocol/errors.ts): the same request may succeed if sent again.
 */
export function errorBody(err: CortadoError, rid: string): { error: Record<string, unknown> } {
  const error: Record<string, unknown> = { code: err.code, message: err.message, retryable: err.retryable, request_id: rid };
  if (err.code === 'VALIDATION_FAILED' && err.details?.errors) error.details = { errors: err.details.errors };
  if (err.code === 'SQL_REJECTED' && err.details?.kind) error.details = { kind: err.details.kind };
  // a cookie write without its CSRF token: the header and the session route to read it from (edge/caller.ts)
  if (err.code === 'FORBIDDEN' && typeof err.details?.header === 'string' && typeof err.details.session === 'string') {
    error.details = { header: err.details.header, session: err.details.session };
  }
  return { error };
}

export function sendError(res: HttpResponse, err: unknown, rid: string, extra: Record<string, string> = {}): CortadoError {
  const e = toCortadoError(err);
  // a lockout says how long it lasts (details.retry_after_s); the rate limiter sets its own header
  const wait = e.details?.retry_after_s;
  const retry: Record<string, string> = e.code === 'RATE_LIMITED' && typeof wait === 'number' && Number.isFinite(wait) ? { 'retry-after': String(Math.max(1, Math.ceil(wait))) } : {};
  sendJson(res, e.httpStatus, errorBody(e, rid), rid, { ...retry, ...extra });
  return e;
}

/** A browser loading a page (GET or HEAD asking for HTML), not an API client asking for JSON. */
export function wantsPage(req: HttpRequest): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && /\btext\/html\b/i.test(req.headers.accept ?? '');
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const PAGE_404_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'";

/**
 * A page that is not there, as a page a person can read (a browser asked for HTML): what
 * happened, a way back, and the request id to quote. API clients get the JSON error instead.
 */
export function sendNotFoundPage(res: HttpResponse, req: HttpRequest, rid: string, appName: string, extra: Record<string, string> = {}): CortadoError {
  const e = new CortadoError('NOT_FOUND', `no route for ${req.method} ${req.path}`);
  const name = escapeHtml(appName);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Page not found · ${name}</title>
<style>
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; min-height: 100vh; display: grid; place-items: center; background: Canvas; color: CanvasText; }
main { max-width: 32rem; padding: 24px; }
h1 { font-size: 1.5rem; margin: 0 0 8px; }
p { line-height: 1.5; margin: 0 0 12px; }
a { color: LinkText; }
.rid { font-size: 13px; opacity: .75; }
</style></head>
<body><main>
<h1>This page does not exist</h1>
<p>The address <code>${escapeHtml(req.path.slice(0, 200))}</code> leads nowhere here: it may be mistyped, or the page was moved.</p>
<p><a href="/">Go to ${name}</a></p>
<p class="rid">Request id ${escapeHtml(rid)}</p>
</main></body></html>
`;
  res.send(404, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'content-security-policy': PAGE_404_CSP, [HTTP_REQUEST_ID]: rid, ...SECURITY_HEADERS, ...extra }, req.method === 'HEAD' ? '' : html);
  return e;
}

export interface BodyRules extends TextRules {
  /**
   * What becomes of fields the schema does not declare (edge/http/fields.ts): `refuse` (the
   * default) answers 400 naming the first; `strip` drops them (SQLatte-compatible routes).
   * Either way the route never sees one.
   */
  fields?: FieldPolicy;
}

/**
 * Content type → 415, size → 413, nesting deeper than MAX_JSON_DEPTH → 400 (the server refuses
 * it while reading the body), syntax → 400, control characters → 400 naming the field (every
 * string is a name but the top-level fields `rules.text` names), a field the schema does not
 * declare → 400 naming it (or dropped, `rules.fields`), schema → 400 with the failing paths.
 * The body comes back as the schema's static type (protocol/schemas/http.ts), holding only the
 * fields it declares.
 */
export async function readJson<T extends TSchema>(req: HttpRequest, check: Validator<{}, T>, rules: BodyRules = {}): Promise<StaticEncode<T, {}>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new CortadoError('UNSUPPORTED_MEDIA_TYPE', 'send the body as application/json');
  }
  const raw = await req.body();
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new CortadoError('MALFORMED_BODY', 'the body is not valid JSON');
  }
  checkText(value, rules);
  const strip = rules.fields === FieldPolicy.Strip;
  if (!strip) {
    const extra = undeclaredFields(check.Type(), value);
    if (extra.length) throw undeclared(check.Type(), extra);
  }
  if (!check.Check(value)) {
    const errors = describeErrors(check, value);
    const first = errors[0];
    throw new CortadoError('VALIDATION_FAILED', first ? `${first.path}: ${first.message}` : 'the body does not match the expected shape', { errors });
  }
  if (strip) stripUndeclared(check.Type(), value);
  return value;
}

/** 400 for fields a body may not hold: the first by name, the body's own fields when it is at the top. */
function undeclared(schema: TSchema, paths: string[]): CortadoError {
  const first = paths[0]!;
  const shown = first.length > 80 ? `${first.slice(0, 80)}…` : first;
  const top = /^\/[^/]*$/.test(first);
  const props = (schema as { properties?: unknown }).properties;
  const names = top && props && typeof props === 'object' ? Object.keys(props) : [];
  const known = names.length ? ` (it takes ${names.join(', ')})` : '';
  return new CortadoError('VALIDATION_FAILED', `${shown}: not a field of this body${known}`, {
    errors: paths.slice(0, 20).map((path) => ({ path, message: 'not a field of this body' })),
  });
}
