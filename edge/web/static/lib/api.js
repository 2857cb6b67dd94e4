// The pages' and widgets' HTTP client, the one copy: JSON in and out, the CSRF header of a cookie
// session on every write, a bearer token or the widget's session header when the page has one,
// and one error model: a failure is an ApiError carrying the reply's code, HTTP status and
// request id (docs/http-api.md "Errors"), and readableMessage() turns it into a sentence.

export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || (status ? `HTTP ${status}` : 'the request failed'));
    this.name = 'ApiError';
    this.status = status;
    this.code = error?.code || (status === 0 ? 'NETWORK' : `HTTP_${status}`);
    this.requestId = error?.request_id;
    this.details = error?.details;
  }
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const CSRF_HEADER = 'x-csrf-token';
/** a session route named by a refused write (GET /admin/session, /auth/session, /assistant/session) */
const SESSION_ROUTE = /^\/(admin|auth|assistant)\/session$/;

/**
 * createApi({base, credentials, headers}) → {request, get, post, put, patch, del, setCsrf, setBearer}
 * request(method, path, body, {as: 'json' | 'text' | 'blob' | 'response', also: [503]}) resolves
 * with the body ({} for 204) or throws an ApiError (a status in `also` is read as a reply, e.g.
 * /health's 503 that says what is down); `headers()` adds per-call headers (a widget's X-Session-ID).
 * `onUnauthorized(err)` hears every 401 (a page shows its sign-in form).
 * The CSRF token of a cookie session is taken from any reply that carries one (a sign-in, a
 * session route); a write refused for a missing or stale one (403, its details naming the header
 * and the session route) reads the route once and is sent again.
 */
export function createApi({ base = '', credentials = 'same-origin', headers = () => ({}), onUnauthorized } = {}) {
  let csrf;
  let bearer;
  async function request(method, path, body, opts = {}, retried = false) {
    const { as = 'json', accept, also = [] } = opts;
    const h = {
      accept: accept ?? (as === 'json' ? 'application/json' : '*/*'),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      ...headers(),
      // the token this client read from its session wins over one the host passed in headers()
      ...(csrf && WRITES.has(method) ? { [CSRF_HEADER]: csrf } : {}),
    };
    let res;
    try {
      res = await fetch(`${base}${path}`, { method, credentials, headers: h, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    } catch (err) {
      throw new ApiError(0, { message: `Cortado cannot be reached (${err?.message ?? err})` });
    }
    if (!res.ok && !also.includes(res.status)) {
      const json = await res.json().catch(() => undefined);
      // A cookie write refused for its CSRF header: the session was opened or changed after this
      // client read its token (a sign-in in another tab, frame or part of the page). The reply
      // names the session route; read the token there once and send the write again.
      const d = json?.error?.details;
      const sent = h[CSRF_HEADER];
      if (res.status === 403 && !retried && WRITES.has(method) && credentials !== 'omit' && d?.header === CSRF_HEADER && SESSION_ROUTE.test(d.session ?? '')) {
        const fresh = await request('GET', d.session, undefined, {}, true).catch(() => undefined);
        if (typeof fresh?.csrf_token === 'string' && fresh.csrf_token !== sent) {
          csrf = fresh.csrf_token;
          return request(method, path, body, opts, true);
        }
      }
      const err = new ApiError(res.status, json?.error ?? { request_id: res.headers.get('x-request-id') ?? undefined });
      if (res.status === 401) onUnauthorized?.(err);
      throw err;
    }
    if (as === 'response') return res;
    if (as === 'blob') return { blob: await res.blob(), filename: /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] };
    if (as === 'text') return res.text();
    if (res.status === 204) return {};
    if (!res.headers.get('content-type')?.includes('json')) return res.text();
    const json = await res.json();
    // a sign-in's or a session route's reply: its CSRF token goes with this client's writes from now on
    if (json && typeof json === 'object' && typeof json.csrf_token === 'string' && json.csrf_token) csrf = json.csrf_token;
    return json;
  }
  return {
    request,
    get: (path, opts) => request('GET', path, undefined, opts),
    post: (path, body = {}, opts) => request('POST', path, body, opts),
    put: (path, body = {}, opts) => request('PUT', path, body, opts),
    patch: (path, body = {}, opts) => request('PATCH', path, body, opts),
    del: (path, opts) => request('DELETE', path, undefined, opts),
    /** the CSRF token of the cookie session (from its session route), sent on every write */
    setCsrf(token) { csrf = token || undefined; },
    /** an API token, sent as `Authorization: Bearer` on every call */
    setBearer(token) { bearer = token || undefined; },
    /**
     * GET a session route (/admin/session, /auth/session, /api/workspace …): its body when there
     * is a session, taking its CSRF token for the writes that follow; null when there is none.
     */
    async session(path) {
      try {
        const s = await request('GET', path);
        if (s && typeof s === 'object' && s.csrf_token) csrf = s.csrf_token;
        return s && typeof s === 'object' ? s : null;
      } catch {
        return null;
      }
    },
  };
}

/** A failure as a sentence a person can act on (the code and request id stay on the error). */
export function readableMessage(err) {
  if (!(err instanceof ApiError)) return String(err?.message ?? err);
  const msg = err.message.replace(/^\/([\w/]+): /, '$1: ');
  if (err.status === 0) return `${msg}: check that it is running and the network is up, then try again.`;
  if (err.status === 401) return `Sign in first (${msg}).`;
  if (err.status === 403) return `Not allowed: ${msg}`;
  if (err.status === 404) return `Not found: ${msg}`;
  if (err.status === 409) return `Already defined: ${msg}`;
  if (err.status === 413) return 'Too much at once: send less.';
  if (err.status === 429) return `Too many requests: wait a moment and try again (${msg}).`;
  if (err.status >= 500) return `The server could not do it (${err.code}): ${msg}. Try again in a moment.`;
  return msg;
}

/** A secret kept in the page's sessionStorage (gone with the tab), in memory when storage is off. */
export function sessionSlot(key) {
  const store = (() => { try { return window.sessionStorage; } catch { return undefined; } })();
  let memory;
  return {
    get() { try { return store?.getItem(key) ?? memory; } catch { return memory; } },
    set(v) { memory = v; try { store?.setItem(key, v); } catch { /* storage off: memory only */ } },
    clear() { memory = undefined; try { store?.removeItem(key); } catch { /* ignore */ } },
  };
}
