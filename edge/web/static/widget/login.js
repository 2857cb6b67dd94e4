// The widgets' login forms, drawn into the shell's <form>: a directory login (the assistant
// gate, POST /assistant/login) and a database login (plugins.auth, POST /auth/login) with the
// database type, catalog and schema pickers /auth/config allows. Both resolve with the
// session's secret (`session_id`), which the widget then sends as X-Session-ID.

import { el } from '../lib/dom.js';

const DB_LABELS = { postgresql: 'PostgreSQL', mysql: 'MySQL / MariaDB', trino: 'Trino', bigquery: 'BigQuery' };

function field(label, input) {
  return el('label', {}, label, input);
}

function submitting(form, button, busy) {
  button.disabled = busy;
  for (const i of form.querySelectorAll('input, select')) i.disabled = busy;
}

/**
 * Draw a login form. kind: 'directory' | 'database'. authConfig: GET /auth/config (database).
 * onSubmit(body) → Promise<{ session_id, username }>; resolves once a login succeeded.
 */
export function showLogin(shell, { kind, title, message, authConfig, onSubmit }) {
  const form = shell.login;
  form.replaceChildren();
  const user = el('input', { name: 'username', autocomplete: 'username', required: true, spellcheck: 'false' });
  const pass = el('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const button = el('button', { type: 'submit', text: 'Sign in' });
  form.append(el('h3', { text: title }));
  if (message) form.append(el('p', { class: 'ctd-who', text: message }));
  form.append(field(kind === 'database' ? 'Database user' : 'Username', user), field('Password', pass));

  let pick = () => ({});
  if (kind === 'database') pick = dbPickers(form, authConfig ?? {});
  form.append(button);
  shell.showLogin();

  return new Promise((resolve) => {
    form.onsubmit = async (e) => {
      e.preventDefault();
      if (!user.value.trim() || !pass.value) {
        shell.say('Enter a username and a password.', 'error');
        (user.value.trim() ? pass : user).focus();
        return;
      }
      submitting(form, button, true);
      try {
        const r = await onSubmit({ username: user.value.trim(), password: pass.value, ...pick() });
        pass.value = '';
        form.onsubmit = null;
        shell.say('');
        resolve(r);
      } catch (err) {
        shell.say(err.message, 'error', { code: err.code, requestId: err.requestId });
        pass.focus();
      } finally {
        submitting(form, button, false);
      }
    };
    if (shell.isOpen) user.focus();
  });
}

/** The database type, catalog (database) and schema pickers of a database login; returns the body fields they give. */
function dbPickers(form, cfg) {
  const types = cfg.allowed_db_types?.length ? cfg.allowed_db_types : [cfg.db_provider ?? 'postgresql'];
  const type = el('select', { name: 'db_type' });
  for (const t of types) type.append(el('option', { value: t, text: DB_LABELS[t] ?? t }));
  const catalogs = cfg.allowed_catalogs ?? [];
  const catalog = el('select', { name: 'catalog' });
  const schema = el('select', { name: 'schema' });
  const catLabel = field('Database', catalog);
  const row = el('div', { class: 'ctd-row' }, catLabel, field('Schema', schema));
  const fillSchemas = () => {
    const c = catalogs.find((x) => x.name === catalog.value);
    schema.replaceChildren();
    const list = c?.allowed_schemas ?? [];
    if (!list.length) schema.append(el('option', { value: '', text: '(default)' }));
    for (const s of list) schema.append(el('option', { value: s, text: s }));
  };
  const relabel = () => {
    catLabel.firstChild.textContent = type.value === 'trino' ? 'Catalog' : 'Database';
  };
  if (catalogs.length) {
    if (cfg.discovery_enabled && type.value === 'trino') catalog.append(el('option', { value: '', text: '(any allowed: discovery)' }));
    for (const c of catalogs) catalog.append(el('option', { value: c.name, text: c.name }));
    catalog.addEventListener('change', fillSchemas);
    fillSchemas();
  }
  type.addEventListener('change', relabel);
  relabel();
  if (types.length > 1) form.append(field('Database type', type));
  if (catalogs.length) form.append(row);
  return () => {
    const out = { db_type: type.value };
    if (catalog.value) out[type.value === 'trino' ? 'catalog' : 'database'] = catalog.value;
    if (schema.value) out.schema = schema.value;
    return out;
  };
}
