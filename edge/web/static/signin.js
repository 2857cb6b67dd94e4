// The dashboard's one place to sign in (the header, top right): who you are and Sign out when
// signed in, else a Sign in button that opens a dialog with the sign-ins this server has (GET
// /api/me `sign_in`): your database account (plugins.auth), the directory login (the assistant
// gate), the administrator account, or an API token (kept in this tab's sessionStorage and sent
// as a bearer token by the page's client). A sign-in or sign-out reloads the page, so every tab
// is drawn again for who you are now (docs/ui.md "Signing in").
import { createApi, readableMessage } from './lib/api.js';
import { el } from './lib/dom.js';

/** the tab's API token (the Schedules tab reads the same key) */
export const TOKEN_KEY = 'cortado.api_token';

export function storedToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || undefined; } catch { return undefined; }
}

export function forgetToken() {
  try { sessionStorage.removeItem(TOKEN_KEY); } catch { /* storage off */ }
}

const KIND_LABEL = { admin: 'administrator', assistant: 'directory account', auth: 'database account', auto: 'guest', token: 'API token' };

/** The sign-ins in the order a business user is most likely to need them. */
const METHODS = [
  { key: 'database', label: 'My database account', route: '/auth/login', hint: 'The user name and password you use for the database: you see what it may see.' },
  { key: 'directory', label: 'My company account', route: '/assistant/login', hint: 'Your directory (LDAP) user name and password.' },
  { key: 'admin', label: 'Administrator', route: '/admin/login', hint: 'The administrator account of this Cortado.' },
  { key: 'token', label: 'API token', hint: 'A token issued to you (it starts with ctd_). It is kept in this browser tab only.' },
];

const LOGOUT = { admin: '/admin/logout', assistant: '/assistant/logout', auth: '/auth/logout', auto: '/auth/logout' };

/**
 * Draw the header's account area into `node`. `me`: GET /api/me. `reload()` after a change
 * (default: reload the page at the same tab). Returns {open} to open the dialog from elsewhere
 * (a tab that says "sign in").
 */
export function mountAccount(node, { api, me, reload = () => location.reload() }) {
  const methods = METHODS.filter((m) => me.sign_in?.[m.key]);
  const dialog = signInDialog({ api, methods, reload });
  if (me.signed_in) {
    const who = me.user ?? me.sessions[0]?.user ?? '';
    const kind = me.kind ?? me.sessions[0]?.kind;
    node.replaceChildren(
      el('span', { id: 'who', class: 'who', title: `Signed in as ${who} (${KIND_LABEL[kind] ?? kind})` },
        el('span', { class: 'who-label', text: 'Signed in as ' }), el('strong', { text: who }),
        el('span', { class: 'who-kind', text: ` · ${KIND_LABEL[kind] ?? kind}` })),
      el('button', { type: 'button', id: 'sign-out', class: 'top-button', text: 'Sign out', onclick: () => void signOut() }));
  } else {
    node.replaceChildren(methods.length
      ? el('button', { type: 'button', id: 'sign-in-open', class: 'top-button', text: 'Sign in', onclick: () => dialog.open() })
      : null);
  }
  node.append(dialog.node);

  /** End every sign-in this browser holds here (each session route, and the tab's token). */
  async function signOut() {
    forgetToken();
    api.setBearer(undefined);
    const routes = [...new Set((me.sessions ?? []).map((s) => LOGOUT[s.kind]).filter(Boolean))];
    // each ends its own session; one already gone (expired) is signed out anyway
    await Promise.all(routes.map((r) => api.post(r, {}).catch(() => undefined)));
    reload();
  }

  return { open: () => dialog.open(), available: methods.length > 0 };
}

function signInDialog({ api, methods, reload }) {
  const error = el('p', { id: 'sign-in-error', class: 'error', role: 'alert', hidden: true });
  const hint = el('p', { id: 'sign-in-hint', class: 'muted' });
  const user = el('input', { id: 'sign-in-user', autocomplete: 'username', required: true });
  const pass = el('input', { id: 'sign-in-pass', type: 'password', autocomplete: 'current-password', required: true });
  const database = el('input', { id: 'sign-in-database', autocomplete: 'off' });
  const token = el('input', { id: 'sign-in-token', type: 'password', autocomplete: 'off', placeholder: 'ctd_…' });
  const userRow = el('label', { for: 'sign-in-user', class: 'block' }, 'User name', user);
  const passRow = el('label', { for: 'sign-in-pass', class: 'block' }, 'Password', pass);
  const dbRow = el('label', { for: 'sign-in-database', class: 'block' }, 'Database (optional)', database);
  const tokenRow = el('label', { for: 'sign-in-token', class: 'block' }, 'API token', token);
  const choices = el('fieldset', { class: 'sign-in-methods', hidden: methods.length < 2 },
    el('legend', { text: 'Sign in with' }),
    ...methods.map((m, i) => el('label', { class: 'inline' },
      el('input', { type: 'radio', name: 'sign-in-method', value: m.key, ...(i === 0 ? { checked: true } : {}) }), ` ${m.label}`)));
  const submit = el('button', { type: 'submit', id: 'sign-in-submit', text: 'Sign in' });
  const cancel = el('button', { type: 'button', class: 'ghost', text: 'Cancel' });
  const form = el('form', { id: 'sign-in-form', method: 'dialog' },
    el('h2', { id: 'sign-in-title', text: 'Sign in' }), choices, hint, userRow, passRow, dbRow, tokenRow, error,
    el('div', { class: 'row' }, submit, cancel));
  const node = el('dialog', { id: 'sign-in', 'aria-labelledby': 'sign-in-title' }, form);

  const method = () => methods.find((m) => m.key === form.elements['sign-in-method']?.value) ?? methods[0];
  function show() {
    const m = method();
    if (!m) return;
    hint.textContent = m.hint;
    const isToken = m.key === 'token';
    userRow.hidden = isToken;
    passRow.hidden = isToken;
    user.required = !isToken;
    pass.required = !isToken;
    dbRow.hidden = m.key !== 'database';
    tokenRow.hidden = !isToken;
    token.required = isToken;
    error.hidden = true;
  }
  choices.addEventListener('change', show);
  cancel.addEventListener('click', () => node.close());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const m = method();
    submit.disabled = true;
    error.hidden = true;
    try {
      if (m.key === 'token') {
        const value = token.value.trim();
        // asked before it is kept: a token that does not hold is said here, not on every tab
        const me = await createApi({ credentials: 'omit', headers: () => ({ authorization: `Bearer ${value}` }) }).get('/api/me');
        if (me.kind !== 'token') throw new Error('That token was not accepted: it is unknown, expired or revoked.');
        sessionStorage.setItem(TOKEN_KEY, value);
      } else {
        await api.post(m.route, { username: user.value.trim(), password: pass.value, ...(m.key === 'database' && database.value.trim() ? { database: database.value.trim() } : {}) });
      }
      pass.value = '';
      reload();
    } catch (err) {
      error.textContent = err.status === 401 ? 'That user name and password were not accepted. Check them and try again.' : readableMessage(err);
      error.hidden = false;
      submit.disabled = false;
    }
  });
  show();
  return {
    node,
    open() {
      show();
      node.showModal();
      (method()?.key === 'token' ? token : user).focus();
    },
  };
}
