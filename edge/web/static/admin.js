// The admin panel: sign in, then config, prompts, API tokens, mask rules, audit log, LDAP, semantic layer.
import { semanticTab } from './semantic.js';

const $ = (s, r = document) => r.querySelector(s);
let csrf = '';

function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') n.textContent = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v);
  }
  for (const c of children) if (c != null) n.append(c);
  return n;
}

function flash(text, bad = false) {
  const f = $('#flash');
  f.textContent = text;
  f.className = bad ? 'error' : 'muted';
}

async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text();
  if (!res.ok) {
    if (res.status === 401) showLogin();
    const err = new Error(data?.error ? `${data.error.code}: ${data.error.message}` : `HTTP ${res.status}`);
    Object.assign(err, { status: res.status, code: data?.error?.code, detail: data?.error?.message });
    throw err;
  }
  return data;
}

const run = (fn) => async (e) => {
  e?.preventDefault?.();
  try {
    await fn(e);
  } catch (err) {
    flash(err.message, true);
  }
};

function showLogin() {
  $('#panel').hidden = true;
  $('#login').hidden = false;
  const err = new URLSearchParams(location.search).get('error');
  if (err) {
    $('#login-error').hidden = false;
    $('#login-error').textContent = err === 'RATE_LIMITED' ? 'Too many failed attempts: wait a few minutes.' : 'Wrong username or password.';
  }
}

async function start() {
  try {
    const s = await fetch('/admin/session');
    if (!s.ok) return showLogin();
    const session = await s.json();
    csrf = session.csrf_token;
    $('#who').textContent = `${session.username} · ${session.source}`;
    $('#login').hidden = true;
    $('#panel').hidden = false;
    history.replaceState(null, '', '/admin');
    await show('config');
  } catch {
    showLogin();
  }
}

$('#login-form').addEventListener('submit', run(async (e) => {
  const res = await fetch('/admin/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: $('#username').value, password: $('#password').value }) });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    $('#login-error').hidden = false;
    $('#login-error').textContent = body.error?.message ?? 'Sign-in failed.';
    return;
  }
  $('#password').value = '';
  await start();
}));

$('#sign-out').addEventListener('click', run(async () => {
  await api('POST', '/admin/logout', {});
  showLogin();
}));

for (const b of document.querySelectorAll('.tabs [data-tab]')) b.addEventListener('click', run(() => show(b.dataset.tab)));

async function show(tab) {
  for (const b of document.querySelectorAll('.tabs [data-tab]')) b.classList.toggle('active', b.dataset.tab === tab);
  for (const t of document.querySelectorAll('.tab')) t.hidden = t.id !== `tab-${tab}`;
  flash('');
  await LOADERS[tab]();
}

function rows(tbody, items, cells) {
  $(tbody).replaceChildren(...items.map((it) => el('tr', {}, ...cells(it).map((c) => (c instanceof Node ? el('td', {}, c) : el('td', { text: c ?? '' }))))));
}

const LOADERS = {
  async config() {
    const v = await api('GET', '/admin/config');
    rows('#overrides tbody', v.overrides, (o) => [o.key, JSON.stringify(o.value), o.updated_by, o.updated_at]);
    $('#config-json').textContent = JSON.stringify(v.config, null, 2);
  },
  async prompts() {
    const { prompts } = await api('GET', '/admin/prompts');
    $('#prompts').replaceChildren(...prompts.map((p) => {
      const text = el('textarea', { rows: '8' });
      text.value = p.text;
      return el('div', { class: 'prompt' },
        el('h3', { text: `${p.key} ` }, el('span', { class: 'muted', text: `(${p.source})` })),
        text,
        el('div', { class: 'row' },
          el('button', { text: 'Save', onclick: run(async () => { await api('PUT', `/admin/prompts/${p.key}`, { text: text.value }); flash(`${p.key} saved`); await LOADERS.prompts(); }) }),
          p.source === 'override' ? el('button', { class: 'ghost', text: 'Reset', onclick: run(async () => { await api('DELETE', `/admin/prompts/${p.key}`); flash(`${p.key} reset`); await LOADERS.prompts(); }) }) : null));
    }));
  },
  async tokens() {
    const { tokens } = await api('GET', '/admin/tokens');
    rows('#tokens tbody', tokens, (t) => [t.prefix + '…', t.label, t.username, t.expires_at, t.last_used_at ?? '—', t.status,
      t.status === 'active'
        ? el('button', { class: 'ghost', text: 'Revoke', onclick: run(async () => { await api('POST', `/admin/tokens/${t.id}/revoke`, {}); await LOADERS.tokens(); }) })
        : el('button', { class: 'ghost', text: 'Delete', onclick: run(async () => { await api('DELETE', `/admin/tokens/${t.id}`); await LOADERS.tokens(); }) })]);
  },
  async mask() {
    const { rules } = await api('GET', '/admin/mask-rules');
    rows('#masks tbody', rules, (r) => [r.field_pattern, r.strategy,
      el('input', { type: 'checkbox', ...(r.enabled ? { checked: '' } : {}), onchange: run(async (e) => { await api('PUT', `/admin/mask-rules/${r.id}`, { enabled: e.target.checked }); }) }),
      r.description,
      el('button', { class: 'ghost', text: 'Delete', onclick: run(async () => { await api('DELETE', `/admin/mask-rules/${r.id}`); await LOADERS.mask(); }) })]);
  },
  async audit() {
    const q = new URLSearchParams();
    for (const k of ['type', 'user', 'code']) if ($(`#audit-${k}`).value) q.set(k, $(`#audit-${k}`).value);
    q.set('limit', '200');
    const { entries, total } = await api('GET', `/admin/audit?${q}`);
    rows('#audit tbody', entries, (e) => [e.ts, e.type, e.code, e.user, e.request_id]);
    $('#audit-csv').href = `/admin/audit.csv?${q}`;
    flash(`${total} entries`);
  },
  async ldap() {
    const { settings } = await api('GET', '/admin/ldap');
    $('#ldap-fields').replaceChildren(...Object.entries(settings).map(([k, v]) => {
      const input = typeof v === 'boolean' ? el('input', { type: 'checkbox', name: k, ...(v ? { checked: '' } : {}) }) : el('input', { name: k, value: String(v), ...(k.includes('password') ? { type: 'password' } : {}) });
      return el('label', {}, k, input);
    }));
  },
  semantic: () => semantic.load(),
};
const semantic = semanticTab({ $, el, api, flash });

function ldapSettings() {
  const out = {};
  for (const input of document.querySelectorAll('#ldap-fields input')) {
    out[input.name] = input.type === 'checkbox' ? input.checked : input.type === 'number' || /timeout/.test(input.name) ? Number(input.value) : input.value;
  }
  return out;
}

$('#config-form').addEventListener('submit', run(async () => {
  let value;
  try { value = JSON.parse($('#config-value').value); } catch { value = $('#config-value').value; }
  await api('PUT', `/admin/config/${encodeURIComponent($('#config-key').value.trim())}`, { value });
  flash('saved: applied in every process');
  await LOADERS.config();
}));
$('#config-reset').addEventListener('click', run(async () => {
  await api('DELETE', `/admin/config/${encodeURIComponent($('#config-key').value.trim())}`);
  flash('reset to the file value');
  await LOADERS.config();
}));
$('#token-form').addEventListener('submit', run(async () => {
  const body = {};
  if ($('#token-label').value) body.label = $('#token-label').value;
  if ($('#token-ttl').value) body.ttl_hours = Number($('#token-ttl').value);
  const r = await api('POST', '/admin/tokens', body);
  const p = $('#token-new');
  p.hidden = false;
  p.replaceChildren('Copy it now, it is shown only once: ', el('code', { text: r.token }));
  await LOADERS.tokens();
}));
$('#mask-form').addEventListener('submit', run(async () => {
  await api('POST', '/admin/mask-rules', { field_pattern: $('#mask-pattern').value, strategy: $('#mask-strategy').value, description: $('#mask-desc').value });
  $('#mask-pattern').value = '';
  await LOADERS.mask();
}));
$('#audit-form').addEventListener('submit', run(() => LOADERS.audit()));
$('#ldap-form').addEventListener('submit', run(async () => {
  await api('PUT', '/admin/ldap', { settings: ldapSettings() });
  flash('LDAP settings saved');
}));
$('#ldap-test').addEventListener('click', run(async () => {
  const r = await api('POST', '/admin/ldap/test', { settings: ldapSettings() });
  flash(`${r.ok ? 'OK' : 'Failed'}: ${r.message} (${Math.round(r.latency_ms)} ms)`, !r.ok);
}));

void start();
