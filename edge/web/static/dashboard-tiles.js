// The dashboard's Dashboards tab (/#dashboards): dashboards of tiles, each tile a question asked
// again or pinned SQL run as it is, its answer drawn by <cortado-answer> (answer/element.js) in a
// shadow root of its own, so the page's buttons and tables do not restyle it. A signed-in
// person's dashboards are the server's (/api/dashboards), a visitor's this browser's.
import { $, el, errorBox, icon } from './lib/dom.js';
import { formatLocal, formatLocalTime } from './lib/format.js';

/** Dashboards of a signed-in person are the server's; a visitor's are this browser's (questions refreshed on open). */
function dashboardStore(api, signedIn) {
  if (signedIn) {
    return {
      where: 'server',
      list: async () => (await api.get('/api/dashboards')).dashboards,
      get: (id) => api.get(`/api/dashboards/${encodeURIComponent(id)}`),
      create: (d) => api.post('/api/dashboards', d),
      save: (id, d) => api.put(`/api/dashboards/${encodeURIComponent(id)}`, d),
      remove: (id) => api.del(`/api/dashboards/${encodeURIComponent(id)}`),
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

/** Pinned SQL's rows come back as CSV (/api/export): a column is numeric when every value in it is. */
function replyFromCsv(sql, text) {
  const [head = [], ...rows] = parseCsv(text.replace(/^\uFEFF/, '').replace(/\r?\n$/, ''));
  const numeric = head.map((_, i) => rows.every((r) => r[i] === '' || !Number.isNaN(Number(r[i]))));
  return {
    intent: 'sql', sql,
    columns: head.map((name, i) => ({ name, type: numeric[i] ? 'numeric' : 'text' })),
    rows: rows.map((r) => r.map((v, i) => (v !== '' && numeric[i] && !Number.isNaN(Number(rows[0]?.[i])) ? Number(v) : v))),
    row_count: rows.length,
  };
}

function plainTable(columns, rows) {
  return el('div', { class: 'grid' }, el('table', {},
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c.name })))),
    el('tbody', {}, ...rows.slice(0, 200).map((r) => el('tr', {}, ...r.map((v) => el('td', { text: v === null ? 'null' : String(v) })))))));
}

let answerElement;

/** A tile's result: <cortado-answer> (table, chart, insights) when the answer view loads, else a plain table. */
async function renderTileResult(body, reply) {
  try {
    await (answerElement ??= import('./answer/element.js'));
    const view = document.createElement('cortado-answer');
    view.options = { feedback: false, downloads: false };
    view.reply = reply;
    body.replaceChildren(view);
    return;
  } catch {
    answerElement = undefined; // the answer view is missing: the rows as a table, and try again next time
  }
  body.replaceChildren(reply.columns ? plainTable(reply.columns, reply.rows ?? []) : el('p', { class: 'message', text: reply.message ?? '' }));
}

/** Run one tile (its question, or its pinned SQL) and draw the answer into its article. */
async function runTile(api, tile, article) {
  const body = $('.tile-body', article);
  article.setAttribute('aria-busy', 'true');
  try {
    const reply = tile.sql
      ? replyFromCsv(tile.sql, await api.post('/api/export', { sql: tile.sql, format: 'csv', title: tile.title }, { as: 'text' }))
      : await api.post('/api/query', { question: tile.question });
    await renderTileResult(body, reply);
    article.dataset.runs = String(Number(article.dataset.runs ?? '0') + 1);
    article.dataset.refreshedAt = new Date().toISOString();
    $('.tile-when', article).textContent = `refreshed ${formatLocalTime()}`;
  } catch (e) {
    body.replaceChildren(errorBox(e));
  } finally {
    article.removeAttribute('aria-busy');
  }
}

/** The form that pins a new tile to the dashboard shown. */
function tileForm(signedIn) {
  const f = {
    title: el('input', { id: 'tile-title', required: true, maxlength: '200', autocomplete: 'off' }),
    kind: el('select', { id: 'tile-kind' }, el('option', { value: 'question', text: 'a question (asked again each time)' }), el('option', { value: 'sql', text: 'pinned SQL (run as it is)' })),
    text: el('textarea', { id: 'tile-text', rows: '2', required: true, maxlength: '4000' }),
    refresh: el('input', { id: 'tile-refresh', value: 'on_open', maxlength: '200', autocomplete: 'off', 'aria-describedby': 'tile-refresh-help', readonly: !signedIn }),
  };
  f.form = el('form', { id: 'tile-form', class: 'card', hidden: true },
    el('h3', { text: 'Pin a tile' }),
    el('div', { class: 'grid-form' },
      el('label', { for: 'tile-title' }, 'Title', f.title),
      el('label', { for: 'tile-kind' }, 'What it shows', f.kind),
      el('label', { for: 'tile-refresh' }, 'Refresh', f.refresh)),
    el('label', { for: 'tile-text', class: 'block' }, 'Question or SQL', f.text),
    el('p', { id: 'tile-refresh-help', class: 'muted', text: signedIn ? 'on_open: each time the dashboard opens; or a cron such as 0 8 * * * (also refreshed while the page stays open).' : 'on_open: each time the dashboard opens (sign in to refresh on a cron).' }),
    el('div', { class: 'row' }, el('button', { type: 'submit', id: 'tile-add', text: 'Add tile' })));
  return f;
}

/** One tile's card: its title, refresh and remove buttons, when it ran, and its body. */
function tileArticle(t, { onRefresh, onRemove }) {
  return el('article', { class: 'tile card', 'data-tile-id': t.id, 'aria-labelledby': `tile-h-${t.id}` },
    el('header', { class: 'row' },
      el('h3', { id: `tile-h-${t.id}`, text: t.title }), el('div', { class: 'spacer' }),
      el('button', { type: 'button', class: 'icon-button', 'aria-label': `Refresh ${t.title}`, title: 'Refresh', onclick: onRefresh }, icon('refresh')),
      el('button', { type: 'button', class: 'icon-button', 'aria-label': `Remove ${t.title}`, title: 'Remove the tile', onclick: onRemove }, icon('trash'))),
    el('p', { class: 'muted tile-meta' },
      el('span', { class: 'tile-refresh', text: t.refresh === 'on_open' ? 'refreshed on open' : `refreshed ${t.refresh_description ?? t.refresh}` }), ' · ',
      el('span', { class: 'tile-when', text: 'not run yet' }), ' ',
      el('span', { class: 'tile-next', text: t.next_refresh_at ? `· next ${formatLocal(t.next_refresh_at)}` : '' })),
    el('div', { class: 'tile-body' }, el('span', { class: 'muted', text: 'Loading…' })));
}

/** The tile input the API takes back (what it added, such as next_refresh_at, left out). */
const tileInput = (t) => ({ id: t.id, title: t.title, ...(t.question ? { question: t.question } : {}), ...(t.sql ? { sql: t.sql } : {}), refresh: t.refresh, ...(t.timezone ? { timezone: t.timezone } : {}) });

/** Mount the tab into `root`; {api (lib/api.js, with the session's CSRF token), signedIn}. */
export function mountDashboards(root, { api, signedIn }) {
  const store = dashboardStore(api, signedIn);
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
  const form = tileForm(signedIn);
  const articleOf = (id) => $(`[data-tile-id="${CSS.escape(id)}"]`, tiles);

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
    empty, tiles, form.form);
  form.form.addEventListener('submit', guard(addTile));
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

  async function addTile() {
    if (!current) return;
    const tile = { title: form.title.value.trim(), [form.kind.value]: form.text.value.trim(), refresh: form.refresh.value.trim() || 'on_open' };
    current = await store.save(current.id, { name: current.name, tiles: [...current.tiles.map(tileInput), tile] });
    form.title.value = '';
    form.text.value = '';
    draw();
    const made = current.tiles.at(-1);
    await runTile(api, made, articleOf(made.id));
    say(`Tile "${made.title}" added.`);
  }

  async function removeTile(id) {
    current = await store.save(current.id, { name: current.name, tiles: current.tiles.filter((t) => t.id !== id).map(tileInput) });
    draw();
  }

  /** Re-run a cron tile when it is due while the page is open, then ask when it is due next. */
  function schedule(tile) {
    if (!tile.next_refresh_at) return;
    const wait = Math.max(1000, Date.parse(tile.next_refresh_at) - Date.now());
    const timer = setTimeout(async () => {
      timers.delete(timer);
      const article = articleOf(tile.id);
      if (!article || !current) return;
      await runTile(api, tile, article);
      const fresh = await store.get(current.id).catch(() => undefined);
      const next = fresh?.tiles.find((t) => t.id === tile.id);
      if (next) {
        $('.tile-next', article).textContent = next.next_refresh_at ? `next ${formatLocal(next.next_refresh_at)}` : '';
        schedule(next);
      }
    }, Math.min(wait, 2 ** 31 - 1));
    timers.add(timer);
  }

  function draw() {
    clearTimers();
    // a tile already drawn keeps its result (adding or removing another does not run it again)
    const drawn = new Map([...tiles.children].map((a) => [a.dataset.tileId, a]));
    tiles.replaceChildren(...(current?.tiles ?? []).map((t) => drawn.get(t.id) ?? tileArticle(t, {
      onRefresh: guard(() => runTile(api, t, articleOf(t.id))),
      onRemove: guard(() => removeTile(t.id)),
    })));
    empty.hidden = Boolean(current);
    form.form.hidden = !current;
    for (const t of current?.tiles ?? []) schedule(t);
  }

  async function runAll() {
    await Promise.all((current?.tiles ?? []).map((t) => runTile(api, t, articleOf(t.id))));
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
