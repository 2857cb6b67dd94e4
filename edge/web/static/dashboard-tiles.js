// The dashboard's Dashboards tab (/#dashboards): dashboards of tiles, each tile a question asked
// again or pinned SQL run as it is, its answer drawn by <cortado-answer> (answer/element.js) in a
// shadow root of its own, so the page's buttons and tables do not restyle it. A signed-in
// person's dashboards are the server's (/api/dashboards), a visitor's this browser's.
import { $, el, errorBox, icon } from './lib/dom.js';
import { lastDashboard, rememberDashboard, tileInput } from './lib/dashboards.js';
import { columnLabel, formatLocal, formatLocalTime } from './lib/format.js';

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

function plainTable(columns, rows) {
  return el('div', { class: 'grid' }, el('table', {},
    el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', { scope: 'col', text: c.name })))),
    el('tbody', {}, ...rows.slice(0, 200).map((r) => el('tr', {}, ...r.map((v) => el('td', { text: v === null ? 'null' : String(v) })))))));
}

let answerElement;

/** A tile's result: <cortado-answer> in its tile layout (the chart or the number, the SQL behind a toggle), else a plain table. */
async function renderTileResult(body, reply, { sql, note, title }) {
  try {
    await (answerElement ??= import('./answer/element.js'));
    const view = document.createElement('cortado-answer');
    view.options = { feedback: false, downloads: false, layout: 'tile', question: title, ...(sql ? { sql } : {}), ...(note ? { note } : {}) };
    view.reply = reply;
    body.replaceChildren(view);
    return;
  } catch {
    answerElement = undefined; // the answer view is missing: the rows as a table, and try again next time
  }
  body.replaceChildren(...(note ? [el('p', { class: 'muted tile-note', text: note })] : []),
    reply.columns ? plainTable(reply.columns, reply.rows ?? []) : el('p', { class: 'message', text: reply.message ?? '' }));
}

/**
 * The column a date filter narrows: the first whose type is a day or a moment (date, datetime,
 * timestamp…), from the types the database reported; a time of day or an interval is none.
 */
export function dateColumn(columns) {
  return (columns ?? []).find((c) => /date|timestamp/i.test(c.type ?? '') && !/interval/i.test(c.type ?? ''));
}

const dayText = (d) => new Date(`${d}T00:00:00`).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

/** The date filter in words: "from 1 Mar 2024 to 31 May 2024". */
function rangeText({ from, to }) {
  if (from && to) return `from ${dayText(from)} to ${dayText(to)}`;
  return from ? `from ${dayText(from)}` : `up to ${dayText(to)}`;
}

/**
 * Run one tile and draw its answer into its article. A question is asked again (POST /api/query);
 * pinned SQL runs as it is (POST /api/tiles/run: guarded and masked, typed columns). With the
 * date filter on, the tile's SQL (a question's: that of its last answer) runs again within the
 * days on its date column (the executor's wrap, never SQL written here); a tile without a date
 * column says the filter does not apply. `seen` keeps each tile's SQL and date column.
 */
async function runTile(api, tile, article, { filter, seen }) {
  const body = $('.tile-body', article);
  article.setAttribute('aria-busy', 'true');
  try {
    let known = seen.get(tile.id);
    let reply;
    if (!known || !filter) {
      reply = tile.sql ? await api.post('/api/tiles/run', { sql: tile.sql }) : await api.post('/api/query', { question: tile.question });
      known = { sql: tile.sql ?? reply.sql, column: dateColumn(reply.columns) };
      seen.set(tile.id, known);
    }
    let note;
    if (filter) {
      if (known.column && known.sql) {
        reply = await api.post('/api/tiles/run', { sql: known.sql, date_range: { column: known.column.name, ...filter } });
        note = `Only ${columnLabel(known.column)} ${rangeText(filter)}.`;
      } else {
        reply ??= known.sql ? await api.post('/api/tiles/run', { sql: known.sql }) : await api.post('/api/query', { question: tile.question });
        note = 'The date filter does not apply: this tile has no date column.';
      }
    }
    article.dataset.filter = !filter ? 'none' : known.column ? 'applied' : 'not-applicable';
    await renderTileResult(body, reply, { sql: known.sql, note, title: tile.title });
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

/** One tile's card: its title, refresh and remove buttons, when it ran, its body, and the buttons that arrange it. */
function tileArticle(t, { onRefresh, onRemove, onMove, onSize }) {
  const wide = t.size === 'wide';
  return el('article', { class: `tile card${wide ? ' wide' : ''}`, 'data-tile-id': t.id, 'aria-labelledby': `tile-h-${t.id}` },
    el('header', { class: 'tile-head' },
      el('h3', { id: `tile-h-${t.id}`, text: t.title }),
      el('div', { class: 'tile-tools' },
        el('button', { type: 'button', class: 'icon-button', 'aria-label': `Refresh ${t.title}`, title: 'Refresh', onclick: onRefresh }, icon('refresh')),
        el('button', { type: 'button', class: 'icon-button', 'aria-label': `Remove ${t.title}`, title: 'Remove the tile', onclick: onRemove }, icon('trash')))),
    el('p', { class: 'muted tile-meta' },
      el('span', { class: 'tile-refresh', text: t.refresh === 'on_open' ? 'refreshed on open' : `refreshed ${t.refresh_description ?? t.refresh}` }), ' · ',
      el('span', { class: 'tile-when', text: 'not run yet' }), ' ',
      el('span', { class: 'tile-next', text: t.next_refresh_at ? `· next ${formatLocal(t.next_refresh_at)}` : '' })),
    el('div', { class: 'tile-body' }, el('span', { class: 'muted', text: 'Loading…' })),
    el('div', { class: 'tile-arrange', role: 'group', 'aria-label': `Arrange ${t.title}` },
      el('button', { type: 'button', class: 'icon-button move-earlier', 'aria-label': `Move ${t.title} earlier`, title: 'Move earlier (left, or up)', onclick: () => onMove(-1) }, icon('left')),
      el('button', { type: 'button', class: 'icon-button move-later', 'aria-label': `Move ${t.title} later`, title: 'Move later (right, or down)', onclick: () => onMove(1) }, icon('right')),
      el('button', { type: 'button', class: 'icon-button tile-size', 'aria-pressed': String(wide), 'aria-label': `Wide: ${t.title} across two columns`, title: wide ? 'Make it small' : 'Make it wide', onclick: onSize }, icon('widen'))));
}

/** The date filter above the tiles: from and to days (either may be left empty), Apply and Clear. */
function filterForm() {
  const f = {
    from: el('input', { id: 'dash-from', type: 'date' }),
    to: el('input', { id: 'dash-to', type: 'date' }),
    clear: el('button', { type: 'button', id: 'dash-filter-clear', class: 'ghost', text: 'Clear' }),
    state: el('p', { id: 'dash-filter-state', class: 'muted', 'aria-live': 'polite', text: 'All dates.' }),
  };
  f.form = el('form', { id: 'dash-filter', class: 'card filter', 'aria-label': 'Date filter' },
    el('div', { class: 'row' },
      el('span', { class: 'filter-title' }, icon('calendar'), el('span', { text: 'Dates' })),
      el('label', { for: 'dash-from', class: 'inline' }, 'From ', f.from),
      el('label', { for: 'dash-to', class: 'inline' }, 'To ', f.to),
      el('button', { type: 'submit', id: 'dash-filter-apply', text: 'Apply' }), f.clear),
    f.state);
  return f;
}

/** Mount the tab into `root`; {api (lib/api.js, with the session's CSRF token), signedIn}. */
export function mountDashboards(root, { api, signedIn }) {
  const store = dashboardStore(api, signedIn);
  let current; // the dashboard shown
  let filter; // {from?, to?}: the date filter on every tile, or none
  const seen = new Map(); // tile id → {sql, column}: what its last run said (runTile)
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
  const empty = el('p', { id: 'dash-empty', class: 'muted', text: 'No dashboard yet: create one, or pin an answer from the Assistant ("Pin to dashboard").' });
  const form = tileForm(signedIn);
  const dates = filterForm();
  // the filter runs a tile's SQL on the server (POST /api/tiles/run): for signed-in people
  dates.form.hidden = true;
  const articleOf = (id) => $(`[data-tile-id="${CSS.escape(id)}"]`, tiles);
  const run = (t) => runTile(api, t, articleOf(t.id), { filter, seen });

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
    dates.form, empty, tiles, form.form);
  form.form.addEventListener('submit', guard(addTile));
  select.addEventListener('change', guard(() => open(select.value)));
  dates.form.addEventListener('submit', guard(() => applyFilter({ ...(dates.from.value ? { from: dates.from.value } : {}), ...(dates.to.value ? { to: dates.to.value } : {}) })));
  dates.clear.addEventListener('click', guard(() => {
    dates.from.value = '';
    dates.to.value = '';
    return applyFilter({});
  }));

  async function applyFilter(f) {
    if (f.from && f.to && f.from > f.to) throw new Error('the first day is after the last: swap them');
    filter = f.from || f.to ? f : undefined;
    dates.state.textContent = filter ? `Tiles with a date column show only the rows ${rangeText(filter)}.` : 'All dates.';
    await runAll();
  }

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

  const saveTiles = async (list) => { current = await store.save(current.id, { name: current.name, tiles: list.map(tileInput) }); };

  async function addTile() {
    if (!current) return;
    const tile = { title: form.title.value.trim(), [form.kind.value]: form.text.value.trim(), refresh: form.refresh.value.trim() || 'on_open' };
    await saveTiles([...current.tiles, tile]);
    form.title.value = '';
    form.text.value = '';
    draw();
    const made = current.tiles.at(-1);
    await run(made);
    say(`Tile "${made.title}" added.`);
  }

  async function removeTile(id) {
    await saveTiles(current.tiles.filter((t) => t.id !== id));
    seen.delete(id);
    draw();
  }

  /** One place earlier (-1) or later (+1) in the grid; the focus stays on the button pressed. */
  async function moveTile(id, by) {
    const list = [...current.tiles];
    const i = list.findIndex((t) => t.id === id);
    const j = i + by;
    if (i < 0 || j < 0 || j >= list.length) {
      say(by < 0 ? 'It is the first tile already.' : 'It is the last tile already.');
      return;
    }
    [list[i], list[j]] = [list[j], list[i]];
    await saveTiles(list);
    draw();
    $(by < 0 ? '.move-earlier' : '.move-later', articleOf(id))?.focus();
    say(`"${list[j].title}" moved to place ${j + 1} of ${list.length}.`);
  }

  async function resizeTile(id) {
    const list = current.tiles.map((t) => (t.id === id ? { ...t, size: t.size === 'wide' ? 'small' : 'wide' } : t));
    await saveTiles(list);
    const t = current.tiles.find((x) => x.id === id);
    const article = articleOf(id);
    const wide = t.size === 'wide';
    article.classList.toggle('wide', wide);
    const b = $('.tile-size', article);
    b.setAttribute('aria-pressed', String(wide));
    b.title = wide ? 'Make it small' : 'Make it wide';
    // the chart fits its new width (Chart.js follows its box; the answer is drawn again)
    const view = $('cortado-answer', article);
    if (view) view.reply = view.reply;
    say(`"${t.title}" is ${wide ? 'wide' : 'small'} now.`);
  }

  /** Re-run a cron tile when it is due while the page is open, then ask when it is due next. */
  function schedule(tile) {
    if (!tile.next_refresh_at) return;
    const wait = Math.max(1000, Date.parse(tile.next_refresh_at) - Date.now());
    const timer = setTimeout(async () => {
      timers.delete(timer);
      const article = articleOf(tile.id);
      if (!article || !current) return;
      await run(tile);
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
    // a tile already drawn keeps its result (adding, removing or moving another does not run it again)
    const drawn = new Map([...tiles.children].map((a) => [a.dataset.tileId, a]));
    tiles.replaceChildren(...(current?.tiles ?? []).map((t) => drawn.get(t.id) ?? tileArticle(t, {
      onRefresh: guard(() => run(t)),
      onRemove: guard(() => removeTile(t.id)),
      onMove: (by) => guard(() => moveTile(t.id, by))(),
      onSize: guard(() => resizeTile(t.id)),
    })));
    empty.hidden = Boolean(current);
    form.form.hidden = !current;
    dates.form.hidden = !current || !signedIn;
    for (const t of current?.tiles ?? []) schedule(t);
  }

  async function runAll() {
    await Promise.all((current?.tiles ?? []).map((t) => run(t)));
  }

  async function open(id) {
    current = await store.get(id);
    rememberDashboard(id);
    tiles.replaceChildren();
    seen.clear();
    draw();
    await runAll();
  }

  async function load(want) {
    const list = await store.list();
    select.replaceChildren(...list.map((d) => el('option', { value: d.id, text: d.name })));
    const has = (id) => id && list.some((d) => d.id === id);
    const id = has(want) ? want : has(current?.id) ? current.id : has(lastDashboard()) ? lastDashboard() : list[0]?.id;
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
