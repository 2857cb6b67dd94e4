// The admin panel's Config tab: the config schema as a form (GET /admin/config/schema, built by
// config/form.ts), filled with the values in force (GET /admin/config, secrets masked). Each key
// gets the input its type needs, its meaning, and a "Needs restart" badge when it is read at start
// only (those are shown, not editable: the server refuses them, 403 details.start_only). Secrets
// are write-only: the field is empty, says whether one is set, and only a typed value is sent.
// Save sends the keys that changed, one PUT each, and says beside each field what was wrong.
import { readableMessage } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { plural } from './lib/format.js';

const MASKED = '********';

function valueAt(obj, key) {
  let cur = obj;
  for (const p of key.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, p)) return undefined;
    cur = cur[p];
  }
  return cur;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const idOf = (key) => `cfg-${key.replace(/[^a-z0-9_-]/gi, '-')}`;

/** The input for one field, and how to read a value back from it (or throw a message for people). */
function control(f, value) {
  const id = idOf(f.key);
  const base = { id, name: f.key, 'data-key': f.key, ...(f.restart ? { disabled: '' } : {}) };
  switch (f.kind) {
    case 'boolean': {
      const input = el('input', { ...base, type: 'checkbox', role: 'switch', class: 'switch', ...(value === true ? { checked: '' } : {}) });
      // an optional switch never set stays unset until it is switched on
      return { input, read: () => (value === undefined && !input.checked ? undefined : input.checked) };
    }
    case 'enum': {
      const input = el('select', base, ...(value === undefined ? [el('option', { value: '', text: '(not set)' })] : []),
        ...f.options.map((o) => el('option', { value: o, text: o, ...(o === value ? { selected: '' } : {}) })));
      return { input, read: () => (input.value === '' ? undefined : input.value) };
    }
    case 'integer':
    case 'number': {
      const input = el('input', { ...base, type: 'number', inputmode: f.kind === 'integer' ? 'numeric' : 'decimal', step: f.kind === 'integer' ? '1' : 'any',
        ...(f.minimum !== undefined ? { min: String(f.minimum) } : {}), ...(f.maximum !== undefined ? { max: String(f.maximum) } : {}) });
      if (value !== undefined) input.value = String(value);
      return {
        input,
        read: () => {
          const text = input.value.trim();
          if (text === '') {
            if (value === undefined) return undefined;
            throw new Error('Enter a number (or use "Reset to file").');
          }
          const n = Number(text);
          const range = f.minimum !== undefined && f.maximum !== undefined ? ` from ${f.minimum} to ${f.maximum}`
            : f.minimum !== undefined ? ` of at least ${f.minimum}` : f.maximum !== undefined ? ` of at most ${f.maximum}` : '';
          if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n)) || (f.minimum !== undefined && n < f.minimum) || (f.maximum !== undefined && n > f.maximum)) {
            throw new Error(`Enter ${f.kind === 'integer' ? 'a whole number' : 'a number'}${range}.`);
          }
          return n;
        },
      };
    }
    case 'list': {
      if (f.options) {
        const boxes = f.options.map((o) => el('input', { type: 'checkbox', value: o, name: f.key, ...(Array.isArray(value) && value.includes(o) ? { checked: '' } : {}), ...(f.restart ? { disabled: '' } : {}) }));
        const input = el('fieldset', { id, class: 'choices', 'data-key': f.key, 'aria-label': f.label },
          ...boxes.map((b, i) => el('label', { class: 'check' }, b, f.options[i])));
        return { input, read: () => boxes.filter((b) => b.checked).map((b) => b.value) };
      }
      const input = el('textarea', { ...base, rows: String(Math.min(6, Math.max(2, (value?.length ?? 0) + 1))), placeholder: 'one per line' });
      input.value = Array.isArray(value) ? value.join('\n') : '';
      return {
        input,
        read: () => {
          const list = input.value.split('\n').map((s) => s.trim()).filter(Boolean);
          return list.length === 0 && value === undefined ? undefined : list;
        },
      };
    }
    case 'json': {
      const input = el('textarea', { ...base, class: 'mono', rows: '3', spellcheck: 'false' });
      input.value = value === undefined ? '' : JSON.stringify(value, null, 1);
      return {
        input,
        read: () => {
          if (input.value.trim() === '') return undefined;
          try { return JSON.parse(input.value); } catch { throw new Error('Not valid JSON: check the brackets, commas and "quotes".'); }
        },
      };
    }
    default: {
      if (f.secret) {
        const set = typeof value === 'string' && value !== '';
        const input = el('input', { ...base, type: 'password', autocomplete: 'new-password', placeholder: set ? 'set: type a new value to replace it' : 'not set' });
        return { input, read: () => (input.value === '' ? value : input.value), secret: true };
      }
      // a text of several lines (an e-mail template) keeps its line breaks: a text area
      const lines = [value, f.default].some((v) => typeof v === 'string' && v.includes('\n'));
      const input = lines ? el('textarea', { ...base, rows: '4' }) : el('input', { ...base, type: 'text', spellcheck: 'false', ...(f.pattern ? { pattern: f.pattern } : {}) });
      input.value = value === undefined ? '' : String(value);
      return { input, read: () => (input.value === '' && value === undefined ? undefined : input.value) };
    }
  }
}

/** configTab({api, flash}) → {load}: draws #tab-config. */
export function configTab({ api, flash }) {
  /** key → {f, read, row, error, value} of the form as drawn */
  let fields = new Map();

  function fieldRow(f, value, overridden, reload) {
    const { input, read } = control(f, value);
    const hintId = `${input.id}-hint`;
    const errId = `${input.id}-err`;
    const error = el('p', { class: 'field-error', id: errId, hidden: '' });
    const hint = [
      f.description,
      f.secret ? 'A secret: never shown; leave empty to keep it.' : null,
      f.restart ? `Needs a restart (${f.restart}): change it in config/config.yaml.` : null,
      f.default !== undefined && f.kind !== 'json' && !f.restart ? `Default: ${Array.isArray(f.default) ? f.default.join(', ') || '(none)' : f.default === '' ? '(empty)' : String(f.default)}.` : null,
    ].filter(Boolean).join(' ');
    input.setAttribute('aria-describedby', `${hintId} ${errId}`);
    const head = el('div', { class: 'field-head' },
      f.kind === 'list' && f.options ? el('span', { class: 'field-label', id: `${input.id}-label`, text: f.label }) : el('label', { class: 'field-label', for: input.id, text: f.label }),
      el('code', { class: 'field-key', text: f.key }),
      f.restart ? el('span', { class: 'badge restart', text: 'Needs restart' }) : null,
      overridden ? el('span', { class: 'badge changed', text: 'Changed at run time' }) : null,
      overridden && !f.restart ? el('button', { type: 'button', class: 'ghost small', text: 'Reset to file', 'aria-label': `Reset to file: ${f.label}`, onclick: reload(async () => {
        await api.del(`/admin/config/${encodeURIComponent(f.key)}`);
        flash(`${f.key}: back to the file's value`);
      }) }) : null);
    const row = el('div', { class: `field${f.restart ? ' readonly' : ''}`, 'data-field': f.key, 'data-search': `${f.label} ${f.key} ${f.description ?? ''}`.toLowerCase() },
      head, input, hint ? el('p', { class: 'hint', id: hintId, text: hint }) : el('span', { id: hintId, hidden: '' }), error);
    fields.set(f.key, { f, read, row, input, error, value });
    return row;
  }

  function setError(entry, message) {
    entry.error.textContent = message ?? '';
    entry.error.hidden = !message;
    entry.row.classList.toggle('invalid', Boolean(message));
    const target = entry.input.matches('input, select, textarea') ? entry.input : null;
    if (target) {
      if (message) target.setAttribute('aria-invalid', 'true');
      else target.removeAttribute('aria-invalid');
    }
  }

  async function save() {
    const changes = [];
    let problems = 0;
    for (const entry of fields.values()) {
      setError(entry, undefined);
      if (entry.f.restart) continue;
      let next;
      try {
        next = entry.read();
      } catch (err) {
        setError(entry, err.message);
        problems++;
        continue;
      }
      const before = entry.value;
      if (next === undefined || same(next, before) || (entry.f.secret && next === MASKED)) continue;
      if (entry.f.kind === 'string' && next === '' && before === undefined) continue;
      changes.push([entry, next]);
    }
    let saved = 0;
    for (const [entry, value] of changes) {
      try {
        await api.put(`/admin/config/${encodeURIComponent(entry.f.key)}`, { value });
        entry.value = value;
        saved++;
      } catch (err) {
        setError(entry, readableMessage(err));
        problems++;
      }
    }
    // what was saved shows at once in the list of run-time changes, even beside errors still to fix
    if (saved && problems) showOverrides(await api.get('/admin/config'));
    if (problems) {
      const first = [...fields.values()].find((e) => !e.error.hidden);
      first?.row.closest('details')?.setAttribute('open', '');
      first?.input.focus();
      flash(`${saved ? `${plural(saved, 'setting')} saved; ` : ''}${plural(problems, 'setting')} not saved: see the message${problems === 1 ? '' : 's'} beside ${problems === 1 ? 'it' : 'them'}.`, true);
      return false;
    }
    flash(saved ? `${plural(saved, 'setting')} saved: in force in every process now.` : 'Nothing changed.');
    return saved > 0;
  }

  function filter(text) {
    const q = text.trim().toLowerCase();
    for (const d of document.querySelectorAll('#cfg-sections details')) {
      let shown = 0;
      for (const row of d.querySelectorAll('[data-field]')) {
        const on = !q || row.dataset.search.includes(q);
        row.hidden = !on;
        if (on) shown++;
      }
      d.hidden = shown === 0;
      if (q) d.open = shown > 0;
    }
  }

  async function load() {
    const [schema, view] = await Promise.all([api.get('/admin/config/schema'), api.get('/admin/config')]);
    const overridden = new Set(view.overrides.map((o) => o.key));
    fields = new Map();
    const reload = (fn) => async (e) => {
      e?.preventDefault?.();
      try {
        await fn(e);
        await load();
      } catch (err) {
        flash(readableMessage(err), true);
      }
    };
    const search = el('input', { id: 'cfg-search', type: 'search', placeholder: 'e.g. limit, timeout, e-mail', 'aria-describedby': 'cfg-search-hint' });
    search.addEventListener('input', () => filter(search.value));
    const sections = schema.sections.map((s) => {
      const rows = s.fields.map((f) => fieldRow(f, valueAt(view.config, f.key), overridden.has(f.key), reload));
      const changed = s.fields.filter((f) => overridden.has(f.key)).length;
      return el('details', { class: 'cfg-section', 'data-section': s.key },
        el('summary', {}, el('span', { class: 'cfg-title', text: s.title }),
          el('span', { class: 'muted', text: ` ${plural(s.fields.length, 'setting')}${changed ? `, ${changed} changed at run time` : ''}` })),
        s.description ? el('p', { class: 'hint', text: s.description }) : null,
        el('div', { class: 'form-grid' }, ...rows));
    });
    const form = el('form', { id: 'cfg-form', class: 'admin-form', novalidate: '' },
      el('div', { class: 'field cfg-find' }, el('label', { for: 'cfg-search', class: 'field-label', text: 'Find a setting' }), search,
        el('p', { class: 'hint', id: 'cfg-search-hint', text: 'Settings marked "Needs restart" are read when Cortado starts: change them in config/config.yaml. Secrets are never shown. The prompts and LDAP have tabs of their own.' })),
      el('div', { id: 'cfg-sections' }, ...sections),
      el('div', { class: 'form-actions' }, el('button', { type: 'submit', id: 'cfg-save', text: 'Save changes' })));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const button = $('#cfg-save');
      button.disabled = true;
      try {
        if (await save()) await load();
      } catch (err) {
        flash(readableMessage(err), true);
      } finally {
        if (button.isConnected) button.disabled = false;
      }
    });
    $('#config-form-box').replaceChildren(form);
    showOverrides(view);
  }

  /** the keys changed at run time, and the whole config in force (behind its fold) */
  function showOverrides(view) {
    $('#overrides tbody').replaceChildren(...view.overrides.map((o) => el('tr', {},
      el('td', {}, el('code', { text: o.key })), el('td', { text: JSON.stringify(o.value) }), el('td', { text: o.updated_by }), el('td', { text: o.updated_at }))));
    $('#overrides-none').hidden = view.overrides.length > 0;
    $('#config-json').textContent = JSON.stringify(view.config, null, 2);
  }

  return { load };
}
