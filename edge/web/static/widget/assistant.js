// The Assistant widget: questions on the legacy /query route, answered by the answer view
// (mountAsk). Which session it uses is the server's to say:
// - plugins.assistant_login on: a directory login form (POST /assistant/login);
// - else plugins.auth.auto_session on: an anonymous auto session, opened when the panel first
//   opens (POST /auth/auto-session; the server refuses a page whose Origin is not in
//   auto_session.allowed_origins, and the widget shows why);
// - else anonymous, and when /query answers 401 (query.require_session) a database login
//   (plugins.auth) if there is one, or a message saying sign-in is needed.
// The session's secret travels in X-Session-ID (cookies do not cross sites) and is kept in the
// host page's sessionStorage. A 401 mid-conversation brings the login back with the question kept.
// History and favourites (widget/history.js): on the server for a person who signed in, in the
// host page's localStorage for anyone else (an auto session included).

import { ANSWER_CSS, mountAsk } from '../answer/index.js';
import { createApi, sessionSlot } from '../lib/api.js';
import { historyPanel, widgetHistory } from './history.js';
import { showLogin } from './login.js';
import { answerRoot } from './shell.js';

export async function startAssistant(shell, cfg) {
  const { base } = cfg;
  const slot = sessionSlot(`cortado:${base || location.origin}:assistant`);
  // whether the session is a person's sign-in (server-side history) or an anonymous auto session
  const personSlot = sessionSlot(`cortado:${base || location.origin}:assistant-person`);
  let sid = slot.get();
  let person = Boolean(sid) && personSlot.get() === 'true';
  const headers = () => (sid ? { 'X-Session-ID': sid } : {});
  const api = createApi({ base, headers });
  const [ui, auth] = await Promise.all([api.get('/ui/config').catch(() => ({})), api.get('/auth/config').catch(() => ({}))]);
  const gate = Boolean(ui.sign_in?.assistant_login);
  const autoOn = !gate && Boolean(auth.enabled && auth.auto_session?.enabled);
  const dbLogin = !gate && Boolean(auth.enabled);

  let panel;
  let answers;
  let lastQuestion = '';
  let opening;
  const history = widgetHistory({ base, headers, signedIn: () => Boolean(sid) && person, key: `cortado:${base || location.origin}:history` });

  const mount = () => {
    shell.showBody();
    if (panel) return;
    answers = answerRoot(shell.body, ANSWER_CSS);
    panel = mountAsk(answers, {
      base,
      endpoint: '/query',
      confirmEndpoint: '/query/confirm-execute',
      widget: 'assistant',
      headers,
      credentials: 'same-origin',
      ...(cfg.transport ? { transport: cfg.transport } : {}),
      ...(cfg.examples?.length ? { examples: cfg.examples } : {}),
      history,
      onAuthRequired: (error) => { void authRequired(error); },
    });
    const ask = panel.ask.bind(panel);
    panel.ask = (q) => { lastQuestion = q; return ask(q); };
    historyPanel(shell, history, { onAsk: (q) => { void panel.ask(q); } });
  };

  const signedIn = (id, name, canLogout, isPerson) => {
    sid = id;
    person = isPerson;
    slot.set(id);
    personSlot.set(String(isPerson));
    shell.signedIn(name, canLogout);
  };
  const forget = () => {
    sid = undefined;
    person = false;
    slot.clear();
    personSlot.clear();
    shell.signedIn('', false);
  };

  async function autoSession() {
    try {
      const r = await api.post('/auth/auto-session', {});
      signedIn(r.session_id, r.label || r.username || 'Guest', false, false);
      return true;
    } catch (err) {
      forget();
      shell.say(err.message, 'error', { code: err.code, requestId: err.requestId });
      shell.showBody();
      return false;
    }
  }

  async function login(message) {
    if (gate) {
      const r = await showLogin(shell, {
        kind: 'directory', title: 'Sign in to ask questions', message,
        onSubmit: (body) => api.post('/assistant/login', body),
      });
      signedIn(r.session_id, r.username, false, true);
      return;
    }
    if (dbLogin) {
      const r = await showLogin(shell, {
        kind: 'database', title: 'Sign in with your database account', message, authConfig: auth,
        onSubmit: (body) => api.post('/auth/login', body),
      });
      signedIn(r.session_id, r.username, false, true);
      return;
    }
    shell.say(message || 'This assistant needs a session, and this server offers no sign-in to embedded widgets (ask its operator).', 'error');
    shell.showBody();
    throw new Error('no sign-in');
  }

  /** /query answered 401: a new auto session, or the login form; then the question again. */
  let relogin;
  /** one login at a time, however many requests found the session missing */
  function authRequired(error) {
    relogin ??= reauth(error).finally(() => { relogin = undefined; });
    return relogin;
  }

  async function reauth(error) {
    // the question box keeps what was typed; a question asked from code is remembered
    const q = answers?.querySelector('textarea.question')?.value.trim() || lastQuestion;
    const had = Boolean(sid);
    forget();
    if (autoOn) {
      if (!(await autoSession())) return;
    } else {
      const why = had ? 'Your session has expired: sign in again. Your question is kept.'
        : gate || dbLogin ? 'Sign in to ask questions. Your question is kept.' : error?.message;
      try { await login(why); } catch { return; }
    }
    mount();
    if (q) await panel.ask(q);
  }

  /** First open: the session the server asks for, then the question panel. */
  async function prepare() {
    if (sid) return mount();
    if (gate) {
      try { await login(''); } catch { return; }
      return mount();
    }
    if (autoOn && !(await autoSession())) return;
    mount();
  }

  shell.onOpen(() => { opening ??= prepare(); });
  if (cfg.open) shell.open();
  return {
    get panel() { return panel; },
    signOut() { forget(); },
  };
}
