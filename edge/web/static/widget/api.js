// A small JSON client for the widgets: every call goes to the widget's own Cortado (`base`),
// without cookies across sites (sessions travel in X-Session-ID), and fails with an Error that
// carries the error model's code, HTTP status and request id.

export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = error?.code || (status === 0 ? 'NETWORK' : `HTTP_${status}`);
    this.requestId = error?.request_id;
  }
}

export function client(base, headers = () => ({})) {
  async function call(method, path, body) {
    let res;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        credentials: 'same-origin',
        headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers() },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      throw new ApiError(0, { message: `Cortado cannot be reached (${err?.message ?? err})` });
    }
    let json;
    try { json = await res.json(); } catch { json = undefined; }
    if (!res.ok) throw new ApiError(res.status, json?.error ?? { request_id: res.headers.get('x-request-id') ?? undefined });
    return json ?? {};
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body = {}) => call('POST', path, body),
  };
}

/** The widget's session secret, kept in the host page's sessionStorage (gone with the tab). */
export function sessionSlot(key) {
  const store = (() => { try { return window.sessionStorage; } catch { return undefined; } })();
  let memory;
  return {
    get() { try { return store?.getItem(key) ?? memory; } catch { return memory; } },
    set(v) { memory = v; try { store?.setItem(key, v); } catch { /* storage off: memory only */ } },
    clear() { memory = undefined; try { store?.removeItem(key); } catch { /* ignore */ } },
  };
}
