// The admin panel: sign in, then config, prompts, API tokens, mask rules, audit log, LDAP, semantic layer, scheduler, e-mail.
import { semanticTab } from './semantic.js';
import { emailTab, schedulerTab } from './admin-scheduler.js';
import { wireSignIn } from './admin-signin.js';
import { configTab } from './admin-config.js';
import { AUDIT_KINDS, auditTab } from './admin-audit.js';
import { createApi, readableMessage } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { formatPercent } from './lib/format.js';

function flash(text, bad = false) {
  const f = $('#flash');
  f.textContent = text;
  f.className = bad ? 'error' : 'muted';
}

// the admin session's client: its CSRF token on every write (api.session), the sign-in form on a 401
const api = createApi({ onUnauthorized: () => showLogin() });

const run = (fn) => async (e) => {
  e?.preventDefault?.();
  try {
    await fn(e);
  } catch (err) {
    flash(readableMessage(err), true);
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
    const session = await api.session('/admin/session');
    if (!session) return showLogin();
    $('#who').textContent = `${session.username} · ${session.source}`;
    $('#login').hidden = true;
    $('#panel').hidden = false;
    history.replaceState(null, '', '/admin');
    await show('config');
  } catch {
    showLogin();
  }
}

wireSignIn(run(start));

$('#sign-out').addEventListener('click', run(async () => {
  await api.post('/admin/logout', {});
  showLogin();
}));

// the tabs are a WAI-ARIA tablist: a click or Enter/Space selects; arrows (wrapping), Home and End
// move the focus and select (a roving tabindex: only the selected tab is in the Tab order)
const tabButtons = () => [...document.querySelectorAll('[role=tablist] [role=tab][data-tab]')];
for (const b of tabButtons()) b.addEventListener('click', run(() => show(b.dataset.tab)));
$('[role=tablist]').addEventListener('keydown', (e) => {
  const all = tabButtons();
  const i = all.indexOf(document.activeElement);
  if (i < 0) return;
  const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: all.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  const next = all[(to + all.length) % all.length];
  next.focus();
  void run(() => show(next.dataset.tab))();
});

async function show(tab) {
  for (const b of tabButtons()) {
    const on = b.dataset.tab === tab;
    b.classList.toggle('active', on);
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  for (const t of document.querySelectorAll('.tab[role=tabpanel]')) t.hidden = t.id !== `tab-${tab}`;
  flash('');
  await LOADERS[tab]();
}

function rows(tbody, items, cells) {
  $(tbody).replaceChildren(...items.map((it) => el('tr', {}, ...cells(it).map((c) => (c instanceof Node ? el('td', {}, c) : el('td', { text: c ?? '' }))))));
}

// ---- evaluate a prompt before saving it (POST /admin/eval) ----------------------------------

const GOLDEN_KEY = 'cortado.admin.golden';

/** The golden set: YAML or JSON, typed or loaded from a file, kept in this browser. */
function goldenEditor() {
  const text = el('textarea', { id: 'golden', rows: '6', placeholder: '- question: How many orders are there?\n  expected_sql: SELECT count(*) FROM orders\n  expected_tables: [orders]' });
  text.value = localStorage.getItem(GOLDEN_KEY) ?? '';
  text.addEventListener('change', () => localStorage.setItem(GOLDEN_KEY, text.value));
  const file = el('input', { type: 'file', accept: '.yaml,.yml,.json,application/json,text/yaml', 'aria-label': 'Load golden questions from a file' });
  file.addEventListener('change', run(async () => {
    const f = file.files?.[0];
    if (!f) return;
    text.value = await f.text();
    localStorage.setItem(GOLDEN_KEY, text.value);
    flash(`${f.name} loaded`);
  }));
  return el('div', { class: 'prompt golden' },
    el('h3', { text: 'Golden questions ' }, el('span', { class: 'muted', text: '(to evaluate a prompt before saving it: question, expected_sql or expected_rows, expected_tables?, ordered?)' })),
    text,
    el('div', { class: 'row' }, file));
}


async function evaluatePrompt(key, candidate, box, button) {
  const golden = $('#golden')?.value.trim() ?? '';
  if (!golden) throw new Error('Add golden questions first (above), then evaluate.');
  localStorage.setItem(GOLDEN_KEY, golden);
  box.replaceChildren(el('p', { class: 'muted', text: 'Evaluating: every golden question as configured, then with this text…' }));
  button.disabled = true;
  try {
    const r = await api.post('/admin/eval', { golden, prompts: { [key]: candidate } });
    const b = r.before.totals;
    const a = r.after.totals;
    const sign = (x) => (x > 0 ? `+${(x * 100).toFixed(1)}` : (x * 100).toFixed(1));
    const after = new Map(r.after.results.map((x) => [x.id, x]));
    box.replaceChildren(
      el('p', { class: 'eval-summary', text: `Accuracy ${formatPercent(b.accuracy)} → ${formatPercent(a.accuracy)} (${sign(r.difference.accuracy)} points; ${a.correct} of ${a.questions} correct). Recall ${formatPercent(b.recall)} → ${formatPercent(a.recall)}. Tokens ${b.input_tokens + b.output_tokens} → ${a.input_tokens + a.output_tokens}. Not saved.` }),
      el('table', {},
        el('thead', {}, el('tr', {}, ...['question', 'as configured', 'with this text'].map((h) => el('th', { text: h })))),
        el('tbody', {}, ...r.before.results.map((x) => el('tr', {},
          el('td', { text: x.question }),
          el('td', { text: x.verdict }),
          el('td', { text: after.get(x.id)?.verdict ?? '–' }))))));
    flash(`${key}: evaluated (not saved)`);
  } catch (err) {
    box.replaceChildren();
    throw err;
  } finally {
    button.disabled = false;
  }
}

const LOADERS = {
  config: () => config.load(),
  async prompts() {
    const { prompts } = await api.get('/admin/prompts');
    $('#prompts').replaceChildren(goldenEditor(), ...prompts.map((p) => {
      const text = el('textarea', { rows: '8', 'aria-label': `Prompt ${p.key}` });
      text.value = p.text;
      const result = el('div', { class: 'eval-result' });
      return el('div', { class: 'prompt' },
        el('h3', { text: `${p.key} ` }, el('span', { class: 'muted', text: `(${p.source})` })),
        p.key === 'sql_generation' ? el('p', { class: 'muted note', text: 'The semantic layer\'s business context is always included: where this text has no {business_context}, it is added after {schema_info}.' }) : null,
        text,
        el('div', { class: 'row' },
          el('button', { text: 'Save', onclick: run(async () => { await api.put(`/admin/prompts/${p.key}`, { text: text.value }); flash(`${p.key} saved`); await LOADERS.prompts(); }) }),
          el('button', { class: 'ghost', text: 'Evaluate before saving', 'data-eval': p.key, onclick: run(async (e) => { await evaluatePrompt(p.key, text.value, result, e.currentTarget); }) }),
          p.source === 'override' ? el('button', { class: 'ghost', text: 'Reset', onclick: run(async () => { await api.del(`/admin/prompts/${p.key}`); flash(`${p.key} reset`); await LOADERS.prompts(); }) }) : null),
        result);
    }));
  },
  async tokens() {
    const { tokens } = await api.get('/admin/tokens');
    rows('#tokens tbody', tokens, (t) => [t.prefix + '…', t.label, t.username, t.expires_at, t.last_used_at ?? '—', t.status,
      t.status === 'active'
        ? el('button', { class: 'ghost', text: 'Revoke', onclick: run(async () => { await api.post(`/admin/tokens/${t.id}/revoke`, {}); await LOADERS.tokens(); }) })
        : el('button', { class: 'ghost', text: 'Delete', onclick: run(async () => { await api.del(`/admin/tokens/${t.id}`); await LOADERS.tokens(); }) })]);
  },
  async mask() {
    const { rules } = await api.get('/admin/mask-rules');
    rows('#masks tbody', rules, (r) => [r.field_pattern, r.strategy,
      el('input', { type: 'checkbox', ...(r.enabled ? { checked: '' } : {}), onchange: run(async (e) => { await api.put(`/admin/mask-rules/${r.id}`, { enabled: e.target.checked }); }) }),
      r.description,
      el('button', { class: 'ghost', text: 'Delete', onclick: run(async () => { await api.del(`/admin/mask-rules/${r.id}`); await LOADERS.mask(); }) })]);
  },
  audit: () => audit.load(),
  async ldap() {
    const { settings } = await api.get('/admin/ldap');
    $('#ldap-fields').replaceChildren(...Object.entries(settings).map(([k, v]) => {
      const choices = LDAP_CHOICES[k];
      const [label, hint] = LDAP_LABELS[k] ?? [k, undefined];
      const id = `ldap-${k}`;
      const described = hint ? { 'aria-describedby': `${id}-hint` } : {};
      const input = typeof v === 'boolean' ? el('input', { id, type: 'checkbox', role: 'switch', class: 'switch', name: k, ...described, ...(v ? { checked: '' } : {}) })
        : choices ? el('select', { id, name: k, ...described }, ...choices.map((c) => el('option', { value: c, text: c, ...(c === v ? { selected: '' } : {}) })))
          : el('input', { id, name: k, value: String(v), ...described, ...(k.includes('password') ? { type: 'password', autocomplete: 'new-password' } : typeof v === 'number' ? { type: 'number', min: '1' } : {}) });
      return el('div', { class: 'field' },
        el('div', { class: 'field-head' }, el('label', { class: 'field-label', for: id, text: label }), el('code', { class: 'field-key', text: `ldap.${k}` })),
        input,
        hint ? el('p', { class: 'hint', id: `${id}-hint`, text: hint }) : null);
    }));
  },
  semantic: () => semantic.load(),
  scheduler: () => scheduler.load(),
  email: () => email.load(),
};
const config = configTab({ api, flash });
const audit = auditTab({ api, flash });
$('#audit-type').replaceChildren(...AUDIT_KINDS.map(([value, text]) => el('option', { value, text })));
const semantic = semanticTab({ api, flash });
const scheduler = schedulerTab({ api, flash });
const email = emailTab({ api, flash });

/** LDAP settings with a fixed set of values (config/schema.ts), shown as a select */
const LDAP_CHOICES = { group_member_attr: ['member', 'memberOf', 'memberUid'] };

/** The LDAP settings (config/schema.ts ldap.*) in words: a label, and what to put there. */
const LDAP_LABELS = {
  enabled: ['Sign in with the directory', 'On: users sign in with their directory account (LDAP or Active Directory).'],
  server: ['Server address', 'ldap://host:389 or ldaps://host:636'],
  use_ssl: ['Encrypt the connection (TLS)', 'Use ldaps:// or StartTLS to the server.'],
  connect_timeout: ['Connection timeout (seconds)', 'How long to wait for the server before giving up.'],
  user_dn_template: ['User DN template', 'The DN of a user, {username} standing for the name typed, e.g. uid={username},ou=people,dc=example,dc=com. Empty: search for the user instead.'],
  bind_dn: ['Service account DN', 'The account that searches the directory, e.g. cn=cortado,ou=services,dc=example,dc=com.'],
  bind_password: ['Service account password', 'Never shown; leave as it is to keep it.'],
  base_dn: ['Search base DN', 'Where users and groups are searched, e.g. dc=example,dc=com.'],
  user_search_filter: ['User search filter', 'How a user is found; {username} stands for the name typed, e.g. (uid={username}).'],
  required_group_dn: ['Group allowed to use the assistant', 'Only its members may sign in to the assistant. Empty: every directory user. (Admins are set by admin.ldap_group_dn in the config file.)'],
  group_member_attr: ['Group membership attribute', 'member or memberUid (on the group), or memberOf (on the user).'],
};

function ldapSettings() {
  const out = {};
  for (const input of document.querySelectorAll('#ldap-fields input, #ldap-fields select')) {
    out[input.name] = input.type === 'checkbox' ? input.checked : input.type === 'number' || /timeout/.test(input.name) ? Number(input.value) : input.value;
  }
  return out;
}

$('#token-form').addEventListener('submit', run(async () => {
  const body = {};
  if ($('#token-label').value) body.label = $('#token-label').value;
  if ($('#token-ttl').value) body.ttl_hours = Number($('#token-ttl').value);
  const r = await api.post('/admin/tokens', body);
  const p = $('#token-new');
  p.hidden = false;
  p.replaceChildren('Copy it now, it is shown only once: ', el('code', { text: r.token }));
  await LOADERS.tokens();
}));
$('#mask-form').addEventListener('submit', run(async () => {
  await api.post('/admin/mask-rules', { field_pattern: $('#mask-pattern').value, strategy: $('#mask-strategy').value, description: $('#mask-desc').value });
  $('#mask-pattern').value = '';
  await LOADERS.mask();
}));
$('#ldap-form').addEventListener('submit', run(async () => {
  await api.put('/admin/ldap', { settings: ldapSettings() });
  flash('LDAP settings saved');
}));
$('#ldap-test').addEventListener('click', run(async () => {
  const r = await api.post('/admin/ldap/test', { settings: ldapSettings() });
  flash(`${r.ok ? 'OK' : 'Failed'}: ${r.message} (${Math.round(r.latency_ms)} ms)`, !r.ok);
}));

void start();
