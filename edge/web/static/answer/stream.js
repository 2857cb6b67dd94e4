// One question's events, over SSE (POST with Accept: text/event-stream) or over the WebSocket
// at /api/ws: both give onEvent(name, data) the same event names and payloads (docs/http-api.md,
// "Streaming: SSE and WebSocket"). A reply that is plain JSON (an error before the stream opens,
// a confirmation) comes as one `result` or `error` event.
import { ApiError, createApi } from '../lib/api.js';
import { randomId } from '../lib/dom.js';

async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(event, JSON.parse(data.join('\n')));
    }
  }
}

/** POST `path` with `body`; events to onEvent until the answer is complete. */
export async function postSse(base, path, body, { api, headers = {}, credentials = 'same-origin', onEvent, stream = true }) {
  let res;
  try {
    // the host's client when it has one (its session's CSRF token), else one for this request
    res = await (api ?? createApi({ base, credentials, headers: () => headers })).post(path, body, { as: 'response', ...(stream ? { accept: 'text/event-stream' } : {}) });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 0) throw err;
    onEvent('error', { error: { code: err.code, message: err.message, request_id: err.requestId, ...(err.details ? { details: err.details } : {}) }, status: err.status });
    return;
  }
  if ((res.headers.get('content-type') ?? '').includes('event-stream')) await readSse(res, onEvent);
  else onEvent('result', await res.json().catch(() => undefined));
}

// ---- WebSocket --------------------------------------------------------------------------------

const sockets = new Map();

/** One socket per base URL, opened on first use; frames matched to their question by `ref`. */
function socketFor(base) {
  let s = sockets.get(base);
  if (s && s.ws.readyState <= 1) return s;
  const origin = base || location.origin;
  const url = `${origin.replace(/^http/, 'ws')}/api/ws`;
  const ws = new WebSocket(url);
  s = { ws, pending: new Map(), ready: new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = () => reject(new Error('the WebSocket could not be opened')); }) };
  ws.onmessage = (m) => {
    let f;
    try { f = JSON.parse(m.data); } catch { return; }
    const p = f.ref !== undefined ? s.pending.get(f.ref) : undefined;
    if (!p) return;
    if (f.event === 'end') { s.pending.delete(f.ref); p.done(); } else p.onEvent(f.event, f.data);
  };
  ws.onclose = (e) => {
    sockets.delete(base);
    for (const p of s.pending.values()) {
      p.onEvent('error', { error: { code: e.code === 1009 ? 'PAYLOAD_TOO_LARGE' : 'NETWORK', message: `the connection closed (${e.code}${e.reason ? `: ${e.reason}` : ''})` } });
      p.done();
    }
    s.pending.clear();
  };
  sockets.set(base, s);
  return s;
}

/** The same as postSse, over /api/ws: `{type, endpoint, headers, ...body}` frames. */
export async function sendWs(base, type, endpoint, body, { headers = {}, onEvent }) {
  const s = socketFor(base);
  await s.ready;
  const ref = randomId().replace(/[^A-Za-z0-9]/g, '').slice(0, 32);
  await new Promise((done) => {
    s.pending.set(ref, { onEvent, done });
    s.ws.send(JSON.stringify({ type, id: ref, endpoint, ...(Object.keys(headers).length ? { headers } : {}), ...body }));
  });
}
