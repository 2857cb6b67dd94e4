// The standalone dashboard (/): tabs per ui.sections (GET /ui/config; a key left out is on; Home
// always), each shown only when its feature is on on this server (the same reply's `features`); keyboard tabs (arrows, Home,
// End) with a URL hash per tab; the Home overview (history, favourites, examples, health); the
// Assistant (the answer view, answer/index.js); Dashboards of tiles (dashboard-tiles.js); Tokens
// (dashboard-tokens.js); the other pages embedded.
import { createHistory } from './history.js';
import { createApi } from './lib/api.js';
import { createPinner } from './lib/dashboards.js';
import { $, el, errorBox, icon } from './lib/dom.js';
import { formatLocal } from './lib/format.js';
import { forgetToken, mountAccount, storedToken } from './signin.js';

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

// GET /api/workspace (api.session): a signed-in person (server-side history, the CSRF token of cookie
// writes), else null. The page's one client: the answer view, the history and the tiles write
// through it, so a cookie write carries the CSRF header, re-read by the client when a sign-in
// elsewhere on the page (the Tokens tab, the Admin tab's frame) changed the session.
const api = createApi();
const state = { ui: { sections: {}, features: {}, sign_in: {} }, me: null, who: null, admin: false, history: null, ask: null, account: null };

// ---- health ------------------------------------------------------------------------------------

/** What the page says of the model: `unreachable` when its calls have been failing (/health). */
const MODEL_WORDS = { ok: 'ok', not_configured: 'not configured', unavailable: 'unavailable', unreachable: 'unreachable' };

async function health() {
  const pill = $('#health');
  const list = $('#home-health');
  try {
    const h = await api.get('/health', { also: [503] });
    const model = MODEL_WORDS[h.llm] ?? String(h.llm).replace('_', ' ');
    // what is wrong first, in words: "model unreachable" where every question would fail
    const wrong = [h.database !== 'ok' ? `database ${h.database}` : null, h.llm !== 'ok' ? `model ${model}` : null].filter(Boolean);
    pill.textContent = h.status === 'ok' ? `ready · v${h.version}` : wrong.join(' · ') || h.status.replace('_', ' ');
    pill.className = `pill ${h.status === 'ok' ? 'ok' : 'degraded'}`;
    list.replaceChildren(
      el('dt', { text: 'Status' }), el('dd', { text: h.status }),
      el('dt', { text: 'Database' }), el('dd', { text: h.database }),
      el('dt', { text: 'Model' }), el('dd', { id: 'home-model', text: model }),
      ...(h.llm === 'unreachable' ? [el('dt', { text: 'Questions' }), el('dd', { text: 'fail until the model answers again' })] : []),
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
  return el('li', { 'data-id': e.id }, ask, el('span', { class: 'muted when', text: formatLocal(e.at) }), star, del);
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
    const { tables } = await api.get('/api/tables');
    box.replaceChildren(...tables.map((t) => el('label', { title: t.comment ?? '' }, el('input', { type: 'checkbox', value: t.name }), ` ${t.name}`)));
    $('#tables-count').textContent = `(${tables.length}; none ticked = let Cortado choose)`;
  } catch (e) {
    box.replaceChildren(el('span', { class: 'muted', text: `cannot list tables: ${e.message}` }));
  }
}

/** One sentence why a tab cannot be used yet, and the way to the header's sign-in. */
function signInFirst(root, text) {
  root.replaceChildren(el('div', { class: 'card sign-in-first' },
    el('p', { class: 'feature-off', text }),
    state.account?.available ? el('button', { type: 'button', class: 'sign-in-here', text: 'Sign in', onclick: () => state.account.open() }) : null));
  return { refresh: async () => {} };
}

async function mountAssistant(root) {
  // plugins.auth.require_login: questions are refused to anyone not signed in (GET /api/me)
  if (state.me?.can?.ask === false) return signInFirst(root, 'This server answers questions for signed-in people only: sign in to ask.');
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
      // the CSRF token of a cookie session: with plugins.auth.require_login, /api/query takes signed-in callers only
      endpoint: '/api/query', widget: 'dashboard', history, api,
      // "Pin to dashboard" on each answer: a signed-in person's dashboards are the server's
      ...(state.who && state.ui.sections.dashboards !== false ? { pin: createPinner(api) } : {}),
      tables: () => [...document.querySelectorAll('#tables input:checked')].map((i) => i.value),
      examples: [...document.querySelectorAll('#examples .chip')].map((c) => c.textContent),
    });
  } catch (e) {
    root.replaceChildren(errorBox({ code: 'UNAVAILABLE', message: `the answer view could not be loaded (${e.message})` }));
  }
  return { refresh: async () => {} };
}

// ---- dashboards ----------------------------------------------------------------------------------

// ---- tokens: a database user's own API tokens ------------------------------------------------------

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
  dashboards: async (root) => (await import('./dashboard-tiles.js')).mountDashboards(root, { api, signedIn: Boolean(state.who) }),
  schedules: async (root) => (await import('./schedules.js')).mount(root, { ...state.ui, me: state.me, signIn: state.account?.available ? () => state.account.open() : undefined }),
  tokens: async (root) => (await import('./dashboard-tokens.js')).mountTokens(root, { api }),
  analytics: mountPage,
  ops: mountPage,
  demo: mountPage,
  admin: mountPage,
};
const mounted = new Map();
/** the GET /ui/config feature behind each tab that has one */
const FEATURE_OF = { assistant: 'assistant', dashboards: 'dashboards', schedules: 'schedules', analytics: 'analytics', ops: 'bigquery_ops', demo: 'demo', tokens: 'tokens', admin: 'admin' };
/** tabs shown (their ui.sections key is on) whose feature is off on this server */
const featureOff = new Set();
/** what an administrator reads on such a tab: how to turn its feature on */
const TURN_ON = {
  analytics: 'Analytics is off on this server. To turn it on, set analytics.enabled: true and give it a PostgreSQL database (analytics.postgresql) in config.yaml, then restart Cortado.',
  ops: 'The warehouse operations console is off on this server. To turn it on, set ops_agent.enabled: true (it needs a BigQuery database) in config.yaml, then restart Cortado.',
  tokens: 'Database sign-ins are off on this server. To turn them on, set plugins.auth.enabled: true in config.yaml, then restart Cortado.',
  admin: 'The admin panel is off on this server. To turn it on, set admin.enabled: true with a username and password in config.yaml, then restart Cortado.',
};
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
    // the selected tab in sight on a narrow strip (the page itself does not scroll)
    if (on) b.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
  }
  markOverflow();
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== `view-${name}`;
  const want = name === 'home' ? '' : `#${name}`;
  if (location.hash !== want) history.replaceState(null, '', want || location.pathname);
  if (name === 'home') return renderHome();
  if (featureOff.has(name)) {
    const root = $(`#view-${name}`);
    if (!root.dataset.off) {
      root.dataset.off = 'true';
      root.replaceChildren(...(state.admin ? [el('p', { class: 'feature-off', text: TURN_ON[name] })] : []));
    }
    return undefined;
  }
  const mount = MOUNT[name];
  if (!mount) return undefined;
  if (!mounted.has(name)) mounted.set(name, Promise.resolve(mount($(`#view-${name}`))));
  const view = await mounted.get(name);
  return view?.refresh?.();
}

/** data-overflow on the tab strip: "start", "end", both or none, where tabs are scrolled out of sight (the CSS fades that side). */
function markOverflow() {
  const list = $('#main-tabs');
  const at = [];
  if (list.scrollLeft > 1) at.push('start');
  if (list.scrollLeft + list.clientWidth < list.scrollWidth - 1) at.push('end');
  if (at.length) list.dataset.overflow = at.join(' ');
  else delete list.dataset.overflow;
}

function setupTabs() {
  const list = $('#main-tabs');
  list.addEventListener('scroll', markOverflow, { passive: true });
  addEventListener('resize', markOverflow);
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
  // an API token signed in from the header (signin.js): every call of the page carries it
  const token = storedToken();
  if (token) api.setBearer(token);
  void health();
  // the pill says so within half a minute when the model stops (or starts) answering
  setInterval(() => void health(), 30_000);
  const NOBODY = { signed_in: false, sessions: [], can: { ask: true, schedules: 'none' }, sign_in: {} };
  const [ui, me, who] = await Promise.all([
    api.get('/ui/config').catch(() => state.ui),
    api.get('/api/me').catch(() => NOBODY),
    api.session('/api/workspace'),
  ]);
  // a token that no longer holds (expired, revoked) is forgotten: the page is a visitor's again
  if (token && !(me.sessions ?? []).some((x) => x.kind === 'token')) {
    forgetToken();
    api.setBearer(undefined);
  }
  state.ui = ui;
  state.me = me;
  state.who = who;
  state.account = mountAccount($('#account'), { api, me });
  state.history = createHistory({ signedIn: Boolean(who), api });
  const s = ui.sections ?? {};
  const f = ui.features ?? {};
  const can = me.can ?? {};
  // a tab is there when its ui.sections key is not false (SPEC: independently of whether the
  // feature is on here) and the person can use it: a feature that is off is said on its tab to
  // an administrator (showView); a tab that is only a login wall for this person is not shown
  const on = (key) => s[key] !== false;
  state.admin = (me.sessions ?? []).some((x) => x.kind === 'admin');
  for (const [view, key] of Object.entries(FEATURE_OF)) if (on(key) && f[key] !== true) featureOff.add(view);
  const usable = (view, allowed) => (featureOff.has(view) ? state.admin : allowed);
  const present = {
    assistant: on('assistant'),
    dashboards: on('dashboards'),
    schedules: on('schedules'),
    analytics: on('analytics') && usable('analytics', Boolean(can.analytics)),
    ops: on('bigquery_ops') && usable('ops', Boolean(can.ops)),
    demo: on('demo'),
    tokens: on('tokens') && usable('tokens', Boolean(can.tokens)),
    admin: on('admin') && usable('admin', Boolean(can.admin)),
  };
  for (const b of document.querySelectorAll('#main-tabs [role=tab]')) {
    if (b.dataset.view !== 'home') b.hidden = !present[b.dataset.view];
  }
  for (const chip of document.querySelectorAll('#examples .chip')) {
    chip.hidden = !present.assistant;
    chip.addEventListener('click', () => askNow(chip.textContent));
  }
  await showView(location.hash.slice(1) || 'home');
  markOverflow(); // the tabs this server has are shown now
  document.body.dataset.ui = 'ready';
}

void start();
