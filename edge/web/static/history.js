// Each person's questions and favourites (ui-contract.md): on the server for a signed-in person
// (GET/POST /api/history, PUT/DELETE /api/history/{id}), in this browser's localStorage for
// everyone else. One shape for both, so the answer view and the dashboard never ask which.
// An ES module without global side effects.

import { createApi } from './lib/api.js';

const KEY = 'cortado.history';
/** what the browser keeps, as the server does: the newest plain entries and every favourite */
export const LOCAL_KEEP = 200;
const QUESTION_MAX = 4000;

function readLocal(key) {
  try {
    const list = JSON.parse(localStorage.getItem(key) ?? '[]');
    return Array.isArray(list) ? list.filter((e) => e && typeof e.id === 'string' && typeof e.question === 'string') : [];
  } catch {
    return [];
  }
}

function writeLocal(key, list) {
  let plain = 0;
  const kept = list.filter((e) => e.favourite || ++plain <= LOCAL_KEEP);
  localStorage.setItem(key, JSON.stringify(kept));
}

function newestFirst(a, b) {
  return a.at < b.at ? 1 : a.at > b.at ? -1 : 0;
}

function localHistory(key) {
  return {
    stored: 'browser',
    async add({ question, sql, row_count, request_id, at } = {}) {
      const q = String(question ?? '').trim().slice(0, QUESTION_MAX);
      if (!q) throw new Error('a history entry needs a question');
      const entry = {
        id: (crypto.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(16).slice(2)}`),
        question: q, favourite: false, at: at ?? new Date().toISOString(),
        ...(sql ? { sql } : {}), ...(Number.isInteger(row_count) ? { row_count } : {}), ...(request_id ? { request_id } : {}),
      };
      writeLocal(key, [entry, ...readLocal(key)].sort(newestFirst));
      return entry;
    },
    async list({ limit = 50 } = {}) {
      return readLocal(key).sort(newestFirst).slice(0, limit);
    },
    async favourites() {
      return readLocal(key).filter((e) => e.favourite).sort(newestFirst);
    },
    async setFavourite(id, on) {
      const list = readLocal(key);
      const e = list.find((x) => x.id === id);
      if (!e) throw new Error('there is no such history entry');
      e.favourite = Boolean(on);
      writeLocal(key, list);
    },
    async remove(id) {
      writeLocal(key, readLocal(key).filter((x) => x.id !== id));
    },
  };
}

/** the history kept on the server (/api/history), through the page's client (`api`) */
function serverHistory(api) {
  const send = (method, path, body) => api.request(method, path, body);
  return {
    stored: 'server',
    async add({ question, sql, row_count, request_id, at } = {}) {
      const q = String(question ?? '').trim().slice(0, QUESTION_MAX);
      return send('POST', '/api/history', {
        question: q, ...(sql ? { sql } : {}), ...(Number.isInteger(row_count) ? { row_count } : {}),
        ...(request_id ? { request_id: String(request_id).slice(0, 64) } : {}), ...(at ? { at } : {}),
      });
    },
    async list({ limit = 50 } = {}) {
      return (await send('GET', `/api/history?limit=${encodeURIComponent(limit)}`)).entries;
    },
    async favourites() {
      return (await send('GET', '/api/history?favourites=true&limit=500')).entries;
    },
    async setFavourite(id, on) {
      await send('PUT', `/api/history/${encodeURIComponent(id)}`, { favourite: Boolean(on) });
    },
    async remove(id) {
      await send('DELETE', `/api/history/${encodeURIComponent(id)}`);
    },
  };
}

/**
 * The History store: `signedIn` → the server's (headers: e.g. the CSRF token of a cookie
 * session, or X-Session-ID; credentials: 'include' by default when `base` is another origin,
 * 'same-origin' for a widget whose session travels in a header), else this browser's
 * (localStorage under `key`).
 */
export function createHistory({ base = '', signedIn = false, headers, credentials, key = KEY, api } = {}) {
  return signedIn ? serverHistory(api ?? createApi({ base, credentials: credentials ?? (base ? 'include' : 'same-origin'), headers: () => headers?.() ?? {} })) : localHistory(key);
}
