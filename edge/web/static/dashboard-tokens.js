// The dashboard's Tokens tab (/#tokens): a database user signed in with their own account
// (plugins.auth, from the header's Sign in: signin.js) issues, lists and revokes their API
// tokens, with a ready MCP client configuration for a new one. The tab is shown only to them.
import { createApi } from './lib/api.js';
import { $, copyInto, el, icon } from './lib/dom.js';
import { formatLocal } from './lib/format.js';

function mcpConfigs(token) {
  const origin = location.origin;
  return {
    sse: JSON.stringify({ mcpServers: { cortado: { url: `${origin}/mcp/sse`, headers: { 'x-mcp-token': token } } } }, null, 2),
    stdio: JSON.stringify({ mcpServers: { cortado: { command: 'cortado-mcp', args: [], env: { SERVICE_TOKEN: token, CORTADO_URL: origin } } } }, null, 2),
  };
}

/** One token as a table row: label, prefix, status, expiry, last use, and Revoke while it is active. */
function tokenRow(t, onRevoke) {
  return el('tr', { 'data-token-id': t.id },
    el('td', { text: t.label }), el('td', {}, el('code', { text: `${t.prefix}…` })),
    el('td', {}, el('span', { class: `badge ${t.status === 'active' ? 'ok' : 'off'}`, text: t.status })),
    el('td', { text: formatLocal(t.expires_at) }),
    el('td', { text: t.last_used_at ? formatLocal(t.last_used_at) : 'never' }),
    el('td', {}, t.status === 'active' ? el('button', { type: 'button', class: 'ghost small revoke', text: 'Revoke', 'aria-label': `Revoke ${t.label}`, onclick: onRevoke }) : null));
}

/** What a newly issued token shows once: the secret and ready MCP client configurations, each with Copy. */
function issuedCard(r) {
  const cfg = mcpConfigs(r.token);
  return [
    el('h3', { text: `Token "${r.info.label}" issued` }),
    el('p', { class: 'warn-text', text: 'Copy it now: it is shown only once and cannot be read again.' }),
    el('div', { class: 'row' }, el('input', { id: 'tok-secret', readonly: true, value: r.token, 'aria-label': 'Your new token', class: 'mono' }), copyButton(r.token, 'Copy token')),
    el('h4', { text: 'MCP client over SSE' }),
    el('pre', { id: 'tok-mcp-sse', class: 'sql' }, cfg.sse), copyButton(cfg.sse, 'Copy SSE configuration'),
    el('h4', { text: 'MCP client over stdio (cortado-mcp)' }),
    el('pre', { id: 'tok-mcp-stdio', class: 'sql' }, cfg.stdio), copyButton(cfg.stdio, 'Copy stdio configuration'),
  ];
}

function copyButton(text, label) {
  const b = el('button', { type: 'button', class: 'ghost small copy' }, icon('copy'), el('span', { text: label }));
  b.addEventListener('click', () => copyInto(b, text, label));
  return b;
}

/**
 * Mount the Tokens tab into `root`: its own database sign-in (/auth/login), then the person's
 * tokens. `api`: the page's client, so the sign-in's CSRF token serves the page's other writes.
 */
export function mountTokens(root, { api = createApi() } = {}) {
  const flash = el('p', { id: 'tok-flash', class: 'muted', 'aria-live': 'polite' });
  const say = (text, bad = false) => { flash.textContent = text; flash.className = bad ? 'error' : 'muted'; };
  const guard = (fn) => async (ev) => {
    ev?.preventDefault?.();
    try { await fn(ev); } catch (e) { say(`${e.code ? `${e.code}: ` : ''}${e.message}`, true); }
  };

  // shown only when no database sign-in holds (it ended since the page was drawn)
  const login = el('p', { id: 'tok-login', class: 'feature-off', hidden: true,
    text: 'API tokens carry your own database access: sign in with your database account (Sign in, top right) to issue them.' });
  const label = el('input', { id: 'tok-label', maxlength: '200', placeholder: 'e.g. Claude on my laptop', autocomplete: 'off' });
  const ttl = el('input', { id: 'tok-ttl', type: 'number', min: '1', step: '1', inputmode: 'numeric' });
  const list = el('tbody');
  const issued = el('div', { id: 'tok-issued', class: 'card', hidden: true });
  const who = el('span', { id: 'tok-who' });
  const main = el('div', { id: 'tok-main', hidden: true },
    el('div', { class: 'card' },
      el('div', { class: 'row' }, el('h2', { text: 'Your API tokens' }), el('div', { class: 'spacer' }), who),
      el('form', { id: 'tok-issue', class: 'row' },
        el('label', { for: 'tok-label', class: 'inline' }, 'Label ', label),
        el('label', { for: 'tok-ttl', class: 'inline' }, 'Hours valid ', ttl),
        el('button', { type: 'submit', text: 'Issue a token' })),
      el('div', { class: 'scroll' }, el('table', { id: 'tok-list' },
        el('thead', {}, el('tr', {}, ...['label', 'token', 'status', 'expires', 'last used', ''].map((h) => el('th', { scope: 'col', text: h })))), list))),
    issued);
  root.replaceChildren(flash, login, main);
  $('#tok-issue', main).addEventListener('submit', guard(issue));

  async function issue() {
    const body = { ...(label.value.trim() ? { label: label.value.trim() } : {}), ...(ttl.value ? { ttl_hours: Number(ttl.value) } : {}) };
    const r = await api.post('/auth/tokens', body);
    issued.replaceChildren(...issuedCard(r));
    issued.hidden = false;
    label.value = '';
    say(`Token ${r.info.prefix}… issued.`);
    await refreshList();
  }

  async function revoke(t) {
    await api.del(`/auth/tokens/${encodeURIComponent(t.id)}`);
    say(`Token ${t.prefix}… revoked: it no longer works.`);
    await refreshList();
  }

  async function refreshList() {
    const { tokens } = await api.get('/auth/tokens');
    list.replaceChildren(...tokens.map((t) => tokenRow(t, guard(() => revoke(t)))));
    if (!tokens.length) list.replaceChildren(el('tr', {}, el('td', { colspan: '6', class: 'muted', text: 'No tokens yet.' })));
  }

  async function show(session) {
    if (session.auto) {
      login.hidden = false;
      return;
    }
    who.textContent = `${session.username}${session.db?.database ? ` on ${session.db.database}` : session.db?.catalog ? ` on ${session.db.catalog}` : ''}`;
    login.hidden = true;
    main.hidden = false;
    await refreshList();
  }

  return {
    async refresh() {
      const s = await api.session('/auth/session');
      if (s) await show(s);
      else {
        main.hidden = true;
        login.hidden = false;
      }
    },
  };
}

