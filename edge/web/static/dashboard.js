// The standalone dashboard (/): tabs per ui.sections (GET /ui/config; a key left out is on; Home
// always), each shown only when its feature is on on this server (the same reply's `features`); keyboard tabs (arrows, Home,
// End) with a URL hash per tab; the Home overview (history, favourites, examples, health); the
// Assistant (the answer view, answer/index.js); Dashboards of tiles; Tokens (a database user's
// own API tokens and a ready MCP client configuration); the other pages embedded.
import { createHistory } from './history.js';

const $ = (sel, root = document) => root.querySelector(sel);
const SVG = 'http://www.w3.org/2000/svg';

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'hidden') node.hidden = true;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

const ICONS = {
  star: ['M12 3l2.8 5.7 6.2.9-4.5 4.4 1 6.2-5.5-2.9-5.5 2.9 1-6.2L3 9.6l6.2-.9z'],
  trash: ['M4 7h16', 'M9 7V4h6v3', 'M6 7l1 13h10l1-13'],
  refresh: ['M20 12a8 8 0 1 1-2.3-5.7', 'M20 4v5h-5'],
  copy: ['M9 9h10v10H9z', 'M5 15V5h10'],
  external: ['M14 4h6v6', 'M20 4l-9 9', 'M18 14v6H4V6h6'],
};

function icon(name) {
  const svg = document.createElementNS(SVG, 'svg');
  for (const [k, v] of Object.entries({ viewBox: '0 0 24 24', width: '16', height: '16', fill: 'none', stroke: 'currentColor', 'stroke-width': '2', 'stroke-linecap': 'round', 'stroke-linejoin': 'round', 'aria-hidden': 'true', focusable: 'false', class: `ctd-icon ctd-icon-${name}` })) svg.setAttribute(k, v);
  for (const d of ICONS[name]) {
    const p = document.createElementNS(SVG, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

async function apiError(res) {
  const body = await res.json().catch(() => ({}));
  const e = new Error(body.error?.message ?? `${res.status} ${res.statusText}`);
  e.code = body.error?.code ?? `HTTP_${res.status}`;
  e.request_id = body.error?.request_id;
  e.status = res.status;
  return e;
}

function errorBox(e) {
  return el('div', { class: 'error', role: 'alert' }, el('code', { text: e.code ?? 'ERROR' }), ` ${e.message}`,
    e.request_id ? el('div', { class: 'muted', text: `request id ${e.request_id}` }) : null);
}

function copyButton(getText, label = 'Copy') {
  const b = el('button', { type: 'button', class: 'ghost small copy' }, icon('copy'), el('span', { text: label }));
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(getText());
      b.lastChild.textContent = 'Copied';
    } catch {
      b.lastChild.textContent = 'Select and copy';
    }
    setTimeout(() => { b.lastChild.textContent = label; }, 2000);
  });
  return b;
}

// ---- theme ------------------------------------------------------------------------------------

function setupTheme() {
  const button = $('#theme-toggle');
  const dark = () => document.documentElement.dataset.theme === 'dark'
    || (!document.documentElement.dataset.theme && matchMedia('(prefers-color-scheme: dark)').matches);
  const show = () => {
    button.setAttribute('aria-pressed', String(dark()));
    button.title = dark() ? 'Switch to the light theme' : 'Switch to the dark theme';
  };
  button.addEventListener('click', () => {
    const next = dark() ? 'light' : 'dark';
    document.documentElement.dataset.theme = next;
    try { localStorage.setItem('cortado.theme', next); } catch { /* private mode: for this page only */ }
    show();
  });
  show();
}

// ---- who is signed in --------------------------------------------------------------------------

/** GET /api/workspace: a signed-in person (server-side history, the CSRF token of cookie writes), else null. */
async function whoAmI() {
  try {
    const r = await fetch('/api/workspace');
    return r.ok ? await r.json() : null;
  } catch {
    return null;
  }
}

const state = { ui: { sections: {}, features: {}, sign_in: {} }, who: null, history: null, ask: null };
const writeHeaders = () => (state.who?.csrf_token ? { 'x-csrf-token': state.who.csrf_token } : {});

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(method === 'GET' ? {} : writeHeaders()) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw await apiError(res);
  return res.json();
}

// ---- health ------------------------------------------------------------------------------------

async function health() {
  const pill = $('#health');
  const list = $('#home-health');
  try {
    const r = await fetch('/health');
    const h = await r.json();
    pill.textContent = h.status === 'ok' ? `ready · v${h.version}` : `database: ${h.database} · LLM: ${String(h.llm).replace('_', ' ')}`;
    pill.className = `pill ${h.status === 'ok' ? 'ok' : 'degraded'}`;
    list.replaceChildren(
      el('dt', { text: 'Status' }), el('dd', { text: h.status }),
      el('dt', { text: 'Database' }), el('dd', { text: h.database }),
      el('dt', { text: 'Model' }), el('dd', { text: String(h.llm).replace('_', ' ') }),
      el('dt', { text: 'Version' }), el('dd', { text: h.version }));
  } catch {
    pill.textContent = 'unreachable';
    pill.className = 'pill down';
    list.replaceChildren(el('dt', { text: 'Status' }), el('dd', { text: 'unreachable' }));
  }
}

// ---- home: history and favourites --------------------------------------------------------------

function askNow(question) {
  if (state.ui.sections.assistant === false) return;
  void showView('assistant').then(() => state.ask?.ask(question)).catch((e) => console.error(e));
}

function historyItem(e, refresh) {
  const star = el('button', {
    type: 'button', class: 'icon-button star', 'aria-pressed': String(Boolean(e.favourite)),
    'aria-label': e.favourite ? `Remove "${e.question}" from the favourites` : `Add "${e.question}" to the favourites`,
    title: e.favourite ? 'Remove from the favourites' : 'Add to the favourites',
  }, icon('star'));
  star.addEventListener('click', async () => {
    await state.history.setFavourite(e.id, !e.favourite);
    await refresh();
  });
  const del = el('button', { type: 'button', class: 'icon-button', 'aria-label': `Forget "${e.question}"`, title: 'Forget this question' }, icon('trash'));
  del.addEventListener('click', async () => {
    await state.history.remove(e.id);
    await refresh();
  });
  const ask = el('button', { type: 'button', class: 'linkish q', text: e.question, title: 'Ask it again' });
  ask.addEventListener('click', () => askNow(e.question));
  return el('li', { 'data-id': e.id }, ask, el('span', { class: 'muted when', text: new Date(e.at).toLocaleString() }), star, del);
}

async function renderHome() {
  const who = $('#home-who');
  who.textContent = state.who
    ? `Signed in as ${state.who.user}: your questions are kept on the server${state.who.stored === 'memory' ? ' (in memory until it restarts)' : ''}.`
    : 'Your questions are kept in this browser.';
  try {
    const [recent, favs] = await Promise.all([state.history.list({ limit: 20 }), state.history.favourites()]);
    $('#home-history').replaceChildren(...recent.map((e) => historyItem(e, renderHome)));
    $('#home-favourites').replaceChildren(...favs.map((e) => historyItem(e, renderHome)));
    $('#home-history-empty').hidden = recent.length > 0;
    $('#home-favourites-empty').hidden = favs.length > 0;
  } catch (e) {
    $('#home-history').replaceChildren(el('li', {}, errorBox(e)));
  }
}

// ---- the answer view (answer/index.js) -------------------------------------------------------------

let answerModule;
const loadAnswer = () => (answerModule ??= import('./answer/index.js'));

/** The table picker above the question box: none ticked lets Cortado choose. */
async function loadTables() {
  const box = $('#tables');
  try {
    const r = await fetch('/api/tables');
    if (!r.ok) throw await apiError(r);
    const { tables } = await r.json();
    box.replaceChildren(...tables.map((t) => el('label', { title: t.comment ?? '' }, el('input', { type: 'checkbox', value: t.name }), ` ${t.name}`)));
    $('#tables-count').textContent = `(${tables.length}; none ticked = let Cortado choose)`;
  } catch (e) {
    box.replaceChildren(el('span', { class: 'muted', text: `cannot list tables: ${e.message}` }));
  }
}

async function mountAssistant(root) {
  void loadTables();
  try {
    const { mountAsk } = await loadAnswer();
    // the history the panel writes to goes back to Home, fresh
    const history = {
      ...state.history,
      add: async (entry) => {
        const saved = await state.history.add(entry);
        void renderHome();
        return saved;
      },
      setFavourite: async (id, on) => {
        await state.history.setFavourite(id, on);
        void renderHome();
      },
    };
    state.ask = mountAsk($('#assistant-root', root) ?? root, {
      endpoint: '/api/query', widget: 'dashboard', history,
      tables: () => [...document.querySelectorAll('#tables input:checked')].map((i) => i.value),
      examples: [...document.querySelectorAll('#examples .chip')].map((c) => c.textContent),
    });
  } catch (e) {
    root.replaceChildren(errorBox({ code: 'UNAVAILABLE', message: `the answer view could not be loaded (${e.message})` }));
  }
  return { refresh: async () => {} };
}

// ---- dashboards ----------------------------------------------------------------------------------

/** Dashboards of a signed-in person are the server's; a visitor's are this browser's (questions refreshed on open). */
function dashboardStore() {
  if (state.who) {
    return {
      where: 'server',
      list: async () => (await api('GET', '/api/dashboards')).dashboards,
      get: (id) => api('GET', `/api/dashboards/${encodeURIComponent(id)}`),
      create: (d) => api('POST', '/api/dashboards', d),
      save: (id, d) => api('PUT', `/api/dashboards/${encodeURIComponent(id)}`, d),
      remove: (id) => api('DELETE', `/api/dashboards/${encodeURIComponent(id)}`),
    };
  }
  const KEY = 'cortado.dashboards';
  const read = () => { try { return JSON.parse(localStorage.getItem(KEY) ?? '[]'); } catch { return []; } };
  const write = (list) => localStorage.setItem(KEY, JSON.stringify(list));
  const withIds = (d) => ({ name: d.name, tiles: d.tiles.map((t) => ({ ...t, id: t.id ?? crypto.randomUUID(), refresh: 'on_open' })) });
  return {
    where: 'browser',
    list: async () => read(),
    get: async (id) => read().find((d) => d.id === id),
    create: async (d) => {
      const made = { id: crypto.randomUUID(), ...withIds(d), created_at: new Date().toISOString(), updated_at: new Date().toISOString() };
      write([...read(), made]);
      return made;
    },
    save: async (id, d) => {
      const list = read();
      const i = list.findIndex((x) => x.id === id);
      list[i] = { ...list[i], ...withIds(d), updated_at: new Date().toISOString() };
      write(list);
      return list[i];
    },
    remove: async (id) => write(read().filter((d) => d.id !== id)),
  };
}

/** One CSV line set (RFC 4180) → rows of strings. */
function parseCsv(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell); rows.push(row); row = []; cell = '';
    } else cell += c;
  }
  if (cell || row.length) { row.push(cell); rows.push(row); }
  return rows;
}

function plainTable(columns, rows) {
  return el('div', { class: 'grid' }, el('table', {},
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c.name })))),
    el('tbody', {}, ...rows.slice(0, 200).map((r) => el('tr', {}, ...r.map((v) => el('td', { text: v === null ? 'null' : String(v) })))))));
}

/** A tile's result: the answer view's renderer (table or chart) when it is there, else a plain table. */
async function renderTileResult(body, reply) {
  try {
    const { renderAnswer, ANSWER_CSS } = await loadAnswer();
    if (!document.getElementById('ctd-answer-css')) document.head.append(el('style', { id: 'ctd-answer-css', text: ANSWER_CSS }));
    body.replaceChildren();
    renderAnswer(body, reply, { feedback: false, downloads: false });
    return;
  } catch {
    // the answer view is missing: the rows as a table
  }
  body.replaceChildren(reply.columns ? plainTable(reply.columns, reply.rows ?? []) : el('p', { class: 'message', text: reply.message ?? '' }));
}

async function runTile(tile, article) {
  const body = $('.tile-body', article);
  article.setAttribute('aria-busy', 'true');
  try {
    let reply;
    if (tile.sql) {
      const res = await fetch('/api/export', { method: 'POST', headers: { 'content-type': 'application/json', ...writeHeaders() }, body: JSON.stringify({ sql: tile.sql, format: 'csv', title: tile.title }) });
      if (!res.ok) throw await apiError(res);
      const [head = [], ...rows] = parseCsv((await res.text()).replace(/^\uFEFF/, '').replace(/\r?\n$/, ''));
      reply = { intent: 'sql', sql: tile.sql, columns: head.map((name) => ({ name, type: rows.every((r) => r[head.indexOf(name)] === '' || !Number.isNaN(Number(r[head.indexOf(name)]))) ? 'numeric' : 'text' })), rows: rows.map((r) => r.map((v, i) => (v !== '' && !Number.isNaN(Number(v)) && !Number.isNaN(Number(rows[0]?.[i])) ? Number(v) : v))), row_count: rows.length };
    } else {
      const res = await fetch('/api/query', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ question: tile.question }) });
      if (!res.ok) throw await apiError(res);
      reply = await res.json();
    }
    await renderTileResult(body, reply);
    article.dataset.runs = String(Number(article.dataset.runs ?? '0') + 1);
    article.dataset.refreshedAt = new Date().toISOString();
    $('.tile-when', article).textContent = `refreshed ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    body.replaceChildren(errorBox(e));
  } finally {
    article.removeAttribute('aria-busy');
  }
}

function mountDashboards(root) {
  const store = dashboardStore();
  let current; // the dashboard shown
  const timers = new Set();
  const clearTimers = () => { for (const t of timers) clearTimeout(t); timers.clear(); };

  const flash = el('p', { id: 'dash-flash', class: 'muted', 'aria-live': 'polite' });
  const say = (text, bad = false) => { flash.textContent = text; flash.className = bad ? 'error' : 'muted'; };
  const guard = (fn) => async (ev) => {
    ev?.preventDefault?.();
    try { await fn(ev); } catch (e) { say(`${e.code ? `${e.code}: ` : ''}${e.message}`, true); }
  };

  const select = el('select', { id: 'dash-select', 'aria-label': 'Dashboard' });
  const name = el('input', { id: 'dash-name', required: true, maxlength: '200', autocomplete: 'off' });
  const tiles = el('div', { id: 'dash-tiles', class: 'tiles', 'aria-live': 'polite' });
  const empty = el('p', { id: 'dash-empty', class: 'muted', text: 'No dashboard yet: create one, then pin questions to it as tiles.' });
  const tTitle = el('input', { id: 'tile-title', required: true, maxlength: '200', autocomplete: 'off' });
  const tKind = el('select', { id: 'tile-kind' }, el('option', { value: 'question', text: 'a question (asked again each time)' }), el('option', { value: 'sql', text: 'pinned SQL (run as it is)' }));
  const tText = el('textarea', { id: 'tile-text', rows: '2', required: true, maxlength: '4000' });
  const tRefresh = el('input', { id: 'tile-refresh', value: 'on_open', maxlength: '200', autocomplete: 'off', 'aria-describedby': 'tile-refresh-help' });
  const tileForm = el('form', { id: 'tile-form', class: 'card', hidden: true },
    el('h3', { text: 'Pin a tile' }),
    el('div', { class: 'grid-form' },
      el('label', { for: 'tile-title' }, 'Title', tTitle),
      el('label', { for: 'tile-kind' }, 'What it shows', tKind),
      el('label', { for: 'tile-refresh' }, 'Refresh', tRefresh)),
    el('label', { for: 'tile-text', class: 'block' }, 'Question or SQL', tText),
    el('p', { id: 'tile-refresh-help', class: 'muted', text: state.who ? 'on_open: each time the dashboard opens; or a cron such as 0 8 * * * (also refreshed while the page stays open).' : 'on_open: each time the dashboard opens (sign in to refresh on a cron).' }),
    el('div', { class: 'row' }, el('button', { type: 'submit', id: 'tile-add', text: 'Add tile' })));
  if (!state.who) tRefresh.readOnly = true;

  root.replaceChildren(
    el('div', { class: 'card' },
      el('div', { class: 'row' },
        el('h2', { text: 'Dashboards' }), el('div', { class: 'spacer' }),
        el('label', { for: 'dash-select', class: 'inline' }, 'Open ', select),
        el('button', { type: 'button', id: 'dash-refresh', class: 'ghost', title: 'Refresh every tile', onclick: guard(() => runAll()) }, icon('refresh'), el('span', { text: 'Refresh' })),
        el('button', { type: 'button', id: 'dash-delete', class: 'ghost', onclick: guard(removeCurrent) }, icon('trash'), el('span', { text: 'Delete' }))),
      el('form', { id: 'dash-new', class: 'row', onsubmit: guard(create) },
        el('label', { for: 'dash-name', class: 'inline' }, 'New dashboard ', name),
        el('button', { type: 'submit', text: 'Create' })),
      el('p', { class: 'muted', text: store.where === 'server' ? 'Kept on the server for you.' : 'Kept in this browser: sign in to keep them on the server.' }),
      flash),
    empty, tiles, tileForm);
  tileForm.addEventListener('submit', guard(addTile));
  select.addEventListener('change', guard(() => open(select.value)));

  async function create() {
    const d = await store.create({ name: name.value.trim(), tiles: [] });
    name.value = '';
    await load(d.id);
    say(`Dashboard "${d.name}" created.`);
  }

  async function removeCurrent() {
    if (!current) return;
    await store.remove(current.id);
    say(`Dashboard "${current.name}" deleted.`);
    current = undefined;
    await load();
  }

  const input = (t) => ({ id: t.id, title: t.title, ...(t.question ? { question: t.question } : {}), ...(t.sql ? { sql: t.sql } : {}), refresh: t.refresh, ...(t.timezone ? { timezone: t.timezone } : {}) });

  async function addTile() {
    if (!current) return;
    const text = tText.value.trim();
    const tile = { title: tTitle.value.trim(), [tKind.value]: text, refresh: tRefresh.value.trim() || 'on_open' };
    current = await store.save(current.id, { name: current.name, tiles: [...current.tiles.map(input), tile] });
    tTitle.value = '';
    tText.value = '';
    draw();
    const made = current.tiles.at(-1);
    await runTile(made, $(`[data-tile-id="${CSS.escape(made.id)}"]`, tiles));
    say(`Tile "${made.title}" added.`);
  }

  async function removeTile(id) {
    current = await store.save(current.id, { name: current.name, tiles: current.tiles.filter((t) => t.id !== id).map(input) });
    draw();
  }

  /** Re-run a cron tile when it is due while the page is open, then ask when it is due next. */
  function schedule(tile) {
    if (!tile.next_refresh_at) return;
    const wait = Math.max(1000, Date.parse(tile.next_refresh_at) - Date.now());
    const timer = setTimeout(async () => {
      timers.delete(timer);
      const article = $(`[data-tile-id="${CSS.escape(tile.id)}"]`, tiles);
      if (!article || !current) return;
      await runTile(tile, article);
      const fresh = await store.get(current.id).catch(() => undefined);
      const next = fresh?.tiles.find((t) => t.id === tile.id);
      if (next) {
        $('.tile-next', article).textContent = next.next_refresh_at ? `next ${new Date(next.next_refresh_at).toLocaleString()}` : '';
        schedule(next);
      }
    }, Math.min(wait, 2 ** 31 - 1));
    timers.add(timer);
  }

  function draw() {
    clearTimers();
    // a tile already drawn keeps its result (adding or removing another does not run it again)
    const drawn = new Map([...tiles.children].map((a) => [a.dataset.tileId, a]));
    tiles.replaceChildren(...(current?.tiles ?? []).map((t) => {
      if (drawn.has(t.id)) return drawn.get(t.id);
      const article = el('article', { class: 'tile card', 'data-tile-id': t.id, 'aria-labelledby': `tile-h-${t.id}` },
        el('header', { class: 'row' },
          el('h3', { id: `tile-h-${t.id}`, text: t.title }), el('div', { class: 'spacer' }),
          el('button', { type: 'button', class: 'icon-button', 'aria-label': `Refresh ${t.title}`, title: 'Refresh', onclick: guard(() => runTile(t, article)) }, icon('refresh')),
          el('button', { type: 'button', class: 'icon-button', 'aria-label': `Remove ${t.title}`, title: 'Remove the tile', onclick: guard(() => removeTile(t.id)) }, icon('trash'))),
        el('p', { class: 'muted tile-meta' },
          el('span', { class: 'tile-refresh', text: t.refresh === 'on_open' ? 'refreshed on open' : `refreshed ${t.refresh_description ?? t.refresh}` }), ' · ',
          el('span', { class: 'tile-when', text: 'not run yet' }), ' ',
          el('span', { class: 'tile-next', text: t.next_refresh_at ? `· next ${new Date(t.next_refresh_at).toLocaleString()}` : '' })),
        el('div', { class: 'tile-body' }, el('span', { class: 'muted', text: 'Loading…' })));
      return article;
    }));
    empty.hidden = Boolean(current);
    tileForm.hidden = !current;
    for (const t of current?.tiles ?? []) schedule(t);
  }

  async function runAll() {
    await Promise.all((current?.tiles ?? []).map((t) => runTile(t, $(`[data-tile-id="${CSS.escape(t.id)}"]`, tiles))));
  }

  async function open(id) {
    current = await store.get(id);
    tiles.replaceChildren();
    draw();
    await runAll();
  }

  async function load(want) {
    const list = await store.list();
    select.replaceChildren(...list.map((d) => el('option', { value: d.id, text: d.name })));
    const id = want && list.some((d) => d.id === want) ? want : current?.id && list.some((d) => d.id === current.id) ? current.id : list[0]?.id;
    if (id) {
      select.value = id;
      await open(id);
    } else {
      current = undefined;
      draw();
    }
  }

  return { refresh: () => load().catch((e) => say(e.message, true)), stop: clearTimers };
}

// ---- tokens: a database user's own API tokens ------------------------------------------------------

function mcpConfigs(token) {
  const origin = location.origin;
  return {
    sse: JSON.stringify({ mcpServers: { cortado: { url: `${origin}/mcp/sse`, headers: { 'x-mcp-token': token } } } }, null, 2),
    stdio: JSON.stringify({ mcpServers: { cortado: { command: 'cortado-mcp', args: [], env: { SERVICE_TOKEN: token, CORTADO_URL: origin } } } }, null, 2),
  };
}

function mountTokens(root) {
  let csrf;
  const flash = el('p', { id: 'tok-flash', class: 'muted', 'aria-live': 'polite' });
  const say = (text, bad = false) => { flash.textContent = text; flash.className = bad ? 'error' : 'muted'; };
  const call = async (method, path, body) => {
    const res = await fetch(path, { method, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(csrf && method !== 'GET' ? { 'x-csrf-token': csrf } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    if (!res.ok) throw await apiError(res);
    return res.json();
  };
  const guard = (fn) => async (ev) => {
    ev?.preventDefault?.();
    try { await fn(ev); } catch (e) { say(`${e.code ? `${e.code}: ` : ''}${e.message}`, true); }
  };

  const user = el('input', { id: 'tok-user', required: true, autocomplete: 'username' });
  const pass = el('input', { id: 'tok-pass', type: 'password', required: true, autocomplete: 'current-password' });
  const database = el('input', { id: 'tok-database', autocomplete: 'off' });
  const login = el('form', { id: 'tok-login', class: 'card' },
    el('h2', { text: 'Sign in with your database account' }),
    el('p', { class: 'muted', text: 'API tokens carry your own database access: sign in with the credentials you use for the database.' }),
    el('div', { class: 'grid-form' },
      el('label', { for: 'tok-user' }, 'User', user), el('label', { for: 'tok-pass' }, 'Password', pass),
      el('label', { for: 'tok-database' }, 'Database or catalog (optional)', database)),
    el('div', { class: 'row' }, el('button', { type: 'submit', text: 'Sign in' })));
  const label = el('input', { id: 'tok-label', maxlength: '200', placeholder: 'e.g. Claude on my laptop', autocomplete: 'off' });
  const ttl = el('input', { id: 'tok-ttl', type: 'number', min: '1', step: '1', inputmode: 'numeric' });
  const list = el('tbody');
  const issued = el('div', { id: 'tok-issued', class: 'card', hidden: true });
  const who = el('span', { id: 'tok-who' });
  const main = el('div', { id: 'tok-main', hidden: true },
    el('div', { class: 'card' },
      el('div', { class: 'row' }, el('h2', { text: 'Your API tokens' }), el('div', { class: 'spacer' }), who,
        el('button', { type: 'button', id: 'tok-logout', class: 'ghost', text: 'Sign out', onclick: guard(logout) })),
      el('form', { id: 'tok-issue', class: 'row' },
        el('label', { for: 'tok-label', class: 'inline' }, 'Label ', label),
        el('label', { for: 'tok-ttl', class: 'inline' }, 'Hours valid ', ttl),
        el('button', { type: 'submit', text: 'Issue a token' })),
      el('div', { class: 'scroll' }, el('table', { id: 'tok-list' },
        el('thead', {}, el('tr', {}, ...['label', 'token', 'status', 'expires', 'last used', ''].map((h) => el('th', { scope: 'col', text: h })))), list))),
    issued);
  root.replaceChildren(flash, login, main);
  login.addEventListener('submit', guard(signIn));
  $('#tok-issue', main).addEventListener('submit', guard(issue));

  async function signIn() {
    const body = { username: user.value.trim(), password: pass.value, ...(database.value.trim() ? { database: database.value.trim() } : {}) };
    const s = await call('POST', '/auth/login', body);
    csrf = s.csrf_token;
    pass.value = '';
    say('Signed in.');
    await show(s);
  }

  async function logout() {
    await call('POST', '/auth/logout', {});
    csrf = undefined;
    issued.hidden = true;
    issued.replaceChildren();
    main.hidden = true;
    login.hidden = false;
    say('Signed out.');
  }

  async function issue() {
    const body = { ...(label.value.trim() ? { label: label.value.trim() } : {}), ...(ttl.value ? { ttl_hours: Number(ttl.value) } : {}) };
    const r = await call('POST', '/auth/tokens', body);
    const cfg = mcpConfigs(r.token);
    const tokenField = el('input', { id: 'tok-secret', readonly: true, value: r.token, 'aria-label': 'Your new token', class: 'mono' });
    issued.replaceChildren(
      el('h3', { text: `Token "${r.info.label}" issued` }),
      el('p', { class: 'warn-text', text: 'Copy it now: it is shown only once and cannot be read again.' }),
      el('div', { class: 'row' }, tokenField, copyButton(() => r.token, 'Copy token')),
      el('h4', { text: 'MCP client over SSE' }),
      el('pre', { id: 'tok-mcp-sse', class: 'sql' }, cfg.sse), copyButton(() => cfg.sse, 'Copy SSE configuration'),
      el('h4', { text: 'MCP client over stdio (cortado-mcp)' }),
      el('pre', { id: 'tok-mcp-stdio', class: 'sql' }, cfg.stdio), copyButton(() => cfg.stdio, 'Copy stdio configuration'));
    issued.hidden = false;
    label.value = '';
    say(`Token ${r.info.prefix}… issued.`);
    await refreshList();
  }

  async function revoke(t) {
    await call('DELETE', `/auth/tokens/${encodeURIComponent(t.id)}`);
    say(`Token ${t.prefix}… revoked: it no longer works.`);
    await refreshList();
  }

  async function refreshList() {
    const { tokens } = await call('GET', '/auth/tokens');
    list.replaceChildren(...tokens.map((t) => el('tr', { 'data-token-id': t.id },
      el('td', { text: t.label }), el('td', {}, el('code', { text: `${t.prefix}…` })),
      el('td', {}, el('span', { class: `badge ${t.status === 'active' ? 'ok' : 'off'}`, text: t.status })),
      el('td', { text: new Date(t.expires_at).toLocaleString() }),
      el('td', { text: t.last_used_at ? new Date(t.last_used_at).toLocaleString() : 'never' }),
      el('td', {}, t.status === 'active' ? el('button', { type: 'button', class: 'ghost small revoke', text: 'Revoke', 'aria-label': `Revoke ${t.label}`, onclick: guard(() => revoke(t)) }) : null))));
    if (!tokens.length) list.replaceChildren(el('tr', {}, el('td', { colspan: '6', class: 'muted', text: 'No tokens yet.' })));
  }

  async function show(session) {
    if (session.auto) {
      say('This is an anonymous session: sign in with your database account to issue tokens.');
      return;
    }
    who.textContent = `${session.username}${session.db?.database ? ` on ${session.db.database}` : session.db?.catalog ? ` on ${session.db.catalog}` : ''}`;
    login.hidden = true;
    main.hidden = false;
    await refreshList();
  }

  return {
    async refresh() {
      const res = await fetch('/auth/session');
      if (res.ok) {
        const s = await res.json();
        csrf = s.csrf_token;
        await show(s);
      }
    },
  };
}

// ---- pages embedded (analytics, ops, demo, admin) ---------------------------------------------------

function mountPage(root) {
  const src = root.dataset.page;
  root.replaceChildren(
    el('div', { class: 'row page-head' }, el('h2', { text: root.dataset.title }), el('div', { class: 'spacer' }),
      el('a', { href: src, class: 'open-page', target: '_blank', rel: 'noopener' }, icon('external'), ' Open in its own page')),
    el('iframe', { src, title: root.dataset.title, class: 'embedded', loading: 'lazy' }));
  return { refresh: async () => {} };
}

// ---- tabs ------------------------------------------------------------------------------------------

const MOUNT = {
  assistant: mountAssistant,
  dashboards: mountDashboards,
  schedules: async (root) => (await import('./schedules.js')).mount(root, state.ui),
  tokens: mountTokens,
  analytics: mountPage,
  ops: mountPage,
  demo: mountPage,
  admin: mountPage,
};
const mounted = new Map();
const tabs = () => [...document.querySelectorAll('#main-tabs [role=tab]')].filter((b) => !b.hidden);

async function showView(name, { focus = false } = {}) {
  const tab = $(`#main-tabs [data-view="${name}"]`);
  if (!tab || tab.hidden) name = 'home';
  for (const b of document.querySelectorAll('#main-tabs [role=tab]')) {
    const on = b.dataset.view === name;
    b.classList.toggle('active', on);
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
    if (on && focus) b.focus();
  }
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== `view-${name}`;
  const want = name === 'home' ? '' : `#${name}`;
  if (location.hash !== want) history.replaceState(null, '', want || location.pathname);
  if (name === 'home') return renderHome();
  const mount = MOUNT[name];
  if (!mount) return undefined;
  if (!mounted.has(name)) mounted.set(name, Promise.resolve(mount($(`#view-${name}`))));
  const view = await mounted.get(name);
  return view?.refresh?.();
}

function setupTabs() {
  const list = $('#main-tabs');
  list.addEventListener('click', (e) => {
    const b = e.target.closest('[role=tab]');
    if (b) void showView(b.dataset.view).catch((err) => console.error(err));
  });
  list.addEventListener('keydown', (e) => {
    const all = tabs();
    const i = all.indexOf(document.activeElement);
    if (i < 0) return;
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: all.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = all[(to + all.length) % all.length];
    void showView(next.dataset.view, { focus: true }).catch((err) => console.error(err));
  });
  addEventListener('hashchange', () => void showView(location.hash.slice(1) || 'home').catch((err) => console.error(err)));
}

async function start() {
  setupTheme();
  setupTabs();
  void health();
  const [ui, who] = await Promise.all([
    fetch('/ui/config').then((r) => (r.ok ? r.json() : state.ui)).catch(() => state.ui),
    whoAmI(),
  ]);
  state.ui = ui;
  state.who = who;
  state.history = createHistory({ signedIn: Boolean(who), headers: writeHeaders });
  const s = ui.sections ?? {};
  const f = ui.features ?? {};
  // a tab is shown when its key is not false AND its feature is on here (GET /ui/config says both)
  const on = (key) => s[key] !== false && f[key] === true;
  const present = {
    assistant: on('assistant'),
    dashboards: on('dashboards'),
    schedules: on('schedules'),
    analytics: on('analytics'),
    ops: on('bigquery_ops'),
    demo: on('demo'),
    tokens: on('tokens'),
    admin: on('admin'),
  };
  for (const b of document.querySelectorAll('#main-tabs [role=tab]')) {
    if (b.dataset.view !== 'home') b.hidden = !present[b.dataset.view];
  }
  for (const chip of document.querySelectorAll('#examples .chip')) {
    chip.hidden = !present.assistant;
    chip.addEventListener('click', () => askNow(chip.textContent));
  }
  await showView(location.hash.slice(1) || 'home');
  document.body.dataset.ui = 'ready';
}

void start();
