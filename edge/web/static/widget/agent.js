// The Authenticated Agent widget (plugins.auth): the person signs in with their own database
// account (database type, catalog/database and schema as /auth/config allows), then asks on
// /auth/query through the answer view, on their own connection. Tables: the session's list
// (GET /auth/tables) with a filter, or, when discovery is on, a search (GET /auth/discover);
// the tables picked narrow the question. Sign out: POST /auth/logout. A 401 mid-session (the
// session expired or was ended) brings the login back with a message, the question kept.
// History and favourites (widget/history.js) are the person's, on the server (/api/history).

import { ANSWER_CSS, mountAsk } from '../answer/index.js';
import { createApi, sessionSlot } from '../lib/api.js';
import { historyPanel, widgetHistory } from './history.js';
import { showLogin } from './login.js';
import { el } from '../lib/dom.js';
import { answerRoot } from './shell.js';

export async function startAgent(shell, cfg) {
  const { base } = cfg;
  const slot = sessionSlot(`cortado:${base || location.origin}:agent`);
  let sid = slot.get();
  const headers = () => (sid ? { 'X-Session-ID': sid } : {});
  const api = createApi({ base, headers });
  const auth = await api.get('/auth/config').catch(() => ({}));

  let panel;
  let pending = '';
  let lastQuestion = '';
  const picked = new Set();
  const tablesBox = el('div', { class: 'ctd-tables', hidden: true });
  const answers = el('div', { class: 'ctd-answers' });
  const history = widgetHistory({ base, headers, signedIn: () => Boolean(sid), key: `cortado:${base || location.origin}:agent-history` });

  const forget = () => {
    sid = undefined;
    slot.clear();
    shell.signedIn('', false);
  };

  function mount() {
    shell.showBody();
    if (panel) return;
    shell.body.append(tablesBox, answers);
    panel = mountAsk(answerRoot(answers, ANSWER_CSS), {
      base,
      endpoint: '/auth/query',
      confirmEndpoint: '/auth/query/confirm',
      widget: 'agent',
      headers,
      credentials: 'same-origin',
      tables: () => [...picked],
      history,
      ...(cfg.transport ? { transport: cfg.transport } : {}),
      ...(cfg.examples?.length ? { examples: cfg.examples } : {}),
      onAuthRequired: (error) => { void expired(error); },
    });
    const ask = panel.ask.bind(panel);
    panel.ask = (q) => { lastQuestion = q; return ask(q); };
    historyPanel(shell, history, { onAsk: (q) => { void panel.ask(q); } });
  }

  async function login(message) {
    const r = await showLogin(shell, {
      kind: 'database', title: 'Sign in with your database account', message, authConfig: auth,
      onSubmit: (body) => api.post('/auth/login', body),
    });
    sid = r.session_id;
    slot.set(sid);
    started(r);
  }

  function started(session) {
    const where = [session.db?.database ?? session.db?.catalog, session.db?.schema].filter(Boolean).join('.');
    shell.signedIn(`${session.username}${where ? ` · ${where}` : ''}`, true);
    mount();
    void loadTables();
  }

  let relogin;
  /** one login at a time, however many requests found the session gone */
  function expired() {
    relogin ??= reauth().finally(() => { relogin = undefined; });
    return relogin;
  }

  async function reauth() {
    // the question box keeps what was typed; a question asked from code is remembered
    pending = answers.querySelector('div')?.shadowRoot?.querySelector('textarea.question')?.value.trim() || lastQuestion;
    forget();
    try {
      await login('Your session has expired or was ended: sign in again. Your question is kept.');
    } catch { return; }
    const q = pending;
    pending = '';
    if (q) await panel.ask(q);
  }

  // ---- tables ---------------------------------------------------------------------------
  let all = [];
  const filter = el('input', { type: 'search', 'aria-label': auth.discovery_enabled ? 'Search tables' : 'Filter tables', placeholder: auth.discovery_enabled ? 'Search tables…' : 'Filter tables…' });
  const list = el('ul', { 'aria-label': 'Tables (pick to narrow the question)' });
  tablesBox.append(filter, list);

  function drawTables(names) {
    list.replaceChildren();
    for (const name of names.slice(0, 200)) {
      const b = el('button', { type: 'button', 'aria-pressed': picked.has(name) ? 'true' : 'false', text: name });
      b.addEventListener('click', () => {
        if (picked.has(name)) picked.delete(name); else picked.add(name);
        b.setAttribute('aria-pressed', picked.has(name) ? 'true' : 'false');
      });
      list.append(el('li', {}, b));
    }
  }

  async function loadTables() {
    try {
      const r = await api.get('/auth/tables');
      all = r.tables ?? [];
      drawTables(all);
      tablesBox.hidden = false;
    } catch (err) {
      if (err.status === 401) return void expired();
      shell.say(`Tables could not be listed: ${err.message}`, 'error', { code: err.code, requestId: err.requestId });
    }
  }

  let searchTimer;
  filter.addEventListener('input', () => {
    const q = filter.value.trim();
    if (!auth.discovery_enabled || !q) {
      drawTables(q ? all.filter((n) => n.toLowerCase().includes(q.toLowerCase())) : all);
      return;
    }
    clearTimeout(searchTimer);
    searchTimer = setTimeout(async () => {
      try {
        const r = await api.get(`/auth/discover?q=${encodeURIComponent(q)}`);
        drawTables((r.tables ?? []).map((t) => [t.catalog, t.schema, t.name].filter(Boolean).join('.')));
      } catch (err) {
        shell.say(err.message, 'error', { code: err.code, requestId: err.requestId });
      }
    }, 250);
  });

  // ---- sign out ---------------------------------------------------------------------------
  shell.onLogout(async () => {
    try { await api.post('/auth/logout', {}); } catch { /* already gone: signed out all the same */ }
    forget();
    picked.clear();
    panel?.clear();
    shell.say('Signed out.');
    void login('').catch(() => undefined);
  });

  async function prepare() {
    if (!auth.enabled) {
      shell.say('The authenticated agent is off on this server (plugins.auth.enabled is false).', 'error');
      return;
    }
    if (sid) {
      try {
        return started(await api.get('/auth/session'));
      } catch {
        forget();
      }
    }
    await login('');
  }

  let opening;
  shell.onOpen(() => { opening ??= prepare(); });
  if (cfg.open) shell.open();
  return { get panel() { return panel; } };
}
