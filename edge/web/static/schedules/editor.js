// The Schedules tab's editor: create or edit one schedule, with the cron helper (presets, the
// five fields, live validation by the server and the next five runs) and, when editing, the
// pinned SQL (edited, or written again from the question).
import { el } from '../lib/dom.js';
import { formatZoned } from '../lib/format.js';
import { describeCron, FIELDS, PRESETS } from './parts.js';

const splitList = (s) => s.split(/[,;\s]+/).map((x) => x.trim()).filter(Boolean);

/** The form's inputs, by name (ids as the page and its tests know them). */
function editorFields() {
  return {
    name: el('input', { id: 'sch-name', maxlength: '200', required: true, placeholder: 'e.g. Weekly revenue' }),
    question: el('textarea', { id: 'sch-question', rows: '2', maxlength: '4000', required: true, placeholder: 'The question, e.g. revenue per store last week' }),
    tables: el('input', { id: 'sch-tables', placeholder: 'tables, comma-separated (optional)' }),
    recipients: el('input', { id: 'sch-recipients', required: true, placeholder: 'a@example.com, b@example.com' }),
    format: el('select', { id: 'sch-format' }, ...['csv', 'excel', 'html'].map((v) => el('option', { value: v, text: v }))),
    subject: el('input', { id: 'sch-subject', maxlength: '998', placeholder: 'subject (optional; {{schedule_name}}, {{date}} …)' }),
    timezone: el('input', { id: 'sch-timezone', maxlength: '64', placeholder: 'time zone (default: the server\'s)' }),
    preset: el('select', { id: 'sch-preset' }, el('option', { value: '', text: 'Custom' }), ...PRESETS.map(([label, cron]) => el('option', { value: cron, text: label }))),
    cron: el('input', { id: 'sch-cron', required: true, maxlength: '200', value: '0 8 * * 1-5', 'aria-describedby': 'sch-cron-help' }),
    fields: FIELDS.map((name, i) => el('input', { id: `sch-cron-${i}`, class: 'cron-field', 'aria-label': name, title: name, size: '6' })),
    sql: el('textarea', { id: 'sch-sql', rows: '6', class: 'mono', spellcheck: 'false' }),
    regenerate: el('input', { id: 'sch-regenerate', type: 'checkbox' }),
  };
}

/**
 * The cron helper over the editor's fields: the cron text, the five fields and the preset kept in
 * step, and the server's verdict (POST /api/schedules/cron-preview) a moment after each change.
 * `onValidity(valid)` hears every verdict.
 */
function cronHelper(api, f, onValidity) {
  const error = el('p', { id: 'sch-cron-error', class: 'error', hidden: true });
  const words = el('p', { id: 'sch-cron-words', class: 'muted' });
  const runs = el('ol', { id: 'sch-cron-runs', class: 'runs' });
  let seq = 0;
  let timer;
  let valid = false;

  function syncFromCron() {
    const parts = f.cron.value.trim().split(/\s+/);
    f.fields.forEach((input, i) => { input.value = parts.length === 5 ? parts[i] : ''; });
    f.preset.value = PRESETS.some(([, c]) => c === parts.join(' ')) ? parts.join(' ') : '';
  }
  function syncFromFields() {
    f.cron.value = f.fields.map((i) => i.value.trim() || '*').join(' ');
    f.preset.value = PRESETS.some(([, c]) => c === f.cron.value) ? f.cron.value : '';
  }
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void preview(), 250);
  };
  async function preview() {
    const mine = ++seq;
    const body = { cron: f.cron.value.trim() };
    if (f.timezone.value.trim()) body.timezone = f.timezone.value.trim();
    let r;
    try {
      r = await api.post('/api/schedules/cron-preview', body);
    } catch (err) {
      r = { valid: false, error: err.message, next_runs: [] };
    }
    if (mine !== seq) return; // an older answer
    valid = r.valid;
    onValidity(valid);
    f.cron.setAttribute('aria-invalid', String(!r.valid));
    error.hidden = r.valid;
    error.textContent = r.valid ? '' : r.error ?? 'not a valid cron';
    words.textContent = r.valid ? `${r.description || describeCron(body.cron)} (${r.timezone})` : '';
    runs.replaceChildren(...(r.valid ? r.next_runs : []).map((t) => el('li', { text: formatZoned(t) })));
  }
  f.preset.addEventListener('change', () => {
    if (!f.preset.value) return;
    f.cron.value = f.preset.value;
    syncFromCron();
    later();
  });
  f.cron.addEventListener('input', () => { syncFromCron(); later(); });
  for (const input of f.fields) input.addEventListener('input', () => { syncFromFields(); later(); });
  f.timezone.addEventListener('input', later);

  const node = el('fieldset', { class: 'cron' },
    el('legend', { text: 'When' }),
    el('div', { class: 'row' }, el('label', {}, 'Preset ', f.preset), el('label', {}, 'Cron ', f.cron)),
    el('div', { class: 'row cron-fields' }, ...f.fields.map((input, i) => el('label', {}, el('span', { class: 'muted', text: FIELDS[i] }), input))),
    el('p', { id: 'sch-cron-help', class: 'muted', text: 'Five fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12), day of week (0-7, 0 and 7 are Sunday). Ranges 1-5, steps */15 and lists 1,15 work.' }),
    error, words,
    el('div', { id: 'sch-cron-next' }, el('span', { class: 'muted', text: 'Next runs:' }), runs));
  return { node, syncFromCron, preview, valid: () => valid };
}

/** What the form says, as the body of POST /api/schedules or PATCH /api/schedules/{id}. */
function editorBody(f, editing) {
  const body = {
    name: f.name.value.trim(),
    question: f.question.value.trim(),
    tables: splitList(f.tables.value),
    cron: f.cron.value.trim().split(/\s+/).join(' '),
    email_recipients: splitList(f.recipients.value),
    format: f.format.value,
    subject: f.subject.value.trim(),
  };
  // a zone is the schedule's own only when asked for (else it follows scheduler.timezone); emptied: none of its own again
  const zone = f.timezone.value.trim();
  if (zone && zone !== editing?.own_timezone) body.timezone = zone;
  else if (!zone && editing?.own_timezone) body.timezone = null;
  if (editing) {
    if (f.regenerate.checked) body.regenerate = true;
    else if (f.sql.value.trim() && f.sql.value.trim() !== editing.sql.trim()) body.sql = f.sql.value.trim();
  }
  return body;
}

/**
 * The editor. `onSaved(schedule, {created, sqlChanged})` after a save; `say(text)` for progress;
 * `guard(fn)` shows what a failed save says. Returns {node, open(schedule?), close()}; open()
 * without a schedule creates a new one.
 */
export function scheduleEditor({ api, say, guard, onSaved, onOpen }) {
  const f = editorFields();
  const save = el('button', { type: 'submit', id: 'sch-save', text: 'Create' });
  const cron = cronHelper(api, f, (valid) => { save.disabled = !valid; });
  const sqlBox = el('div', { id: 'sch-sql-box', hidden: true },
    el('label', { for: 'sch-sql', text: 'Pinned SQL (every run executes it; the guard checks your edits)' }), f.sql,
    el('label', { class: 'check' }, f.regenerate, 'Write the SQL again from the question'));
  const title = el('h3', { text: 'New schedule' });
  let editing; // the schedule being edited, or undefined when creating
  const node = el('form', { id: 'sch-editor', class: 'card sem-form', hidden: true, autocomplete: 'off' },
    title,
    el('div', { class: 'grid-form' },
      el('label', {}, 'Name', f.name),
      el('label', {}, 'Recipients', f.recipients),
      el('label', {}, 'Format', f.format),
      el('label', {}, 'Tables', f.tables),
      el('label', {}, 'Subject', f.subject),
      el('label', {}, 'Time zone', f.timezone)),
    el('label', {}, 'Question', f.question),
    cron.node,
    sqlBox,
    el('div', { class: 'row' }, save, el('button', { type: 'button', class: 'ghost', text: 'Cancel', onclick: () => close() })));

  function open(s) {
    editing = s;
    title.textContent = s ? `Edit "${s.name}"` : 'New schedule';
    save.textContent = s ? 'Save' : 'Create';
    f.name.value = s?.name ?? '';
    f.question.value = s?.question ?? '';
    f.tables.value = (s?.tables ?? []).join(', ');
    f.recipients.value = (s?.email_recipients ?? []).join(', ');
    f.format.value = s?.format ?? 'csv';
    f.subject.value = s?.subject ?? '';
    // the field holds the schedule's own zone; empty: it follows the server's (scheduler.timezone)
    f.timezone.value = s?.own_timezone ?? '';
    f.timezone.placeholder = s && !s.own_timezone ? `time zone (now the server's: ${s.timezone})` : 'time zone (default: the server\'s)';
    f.cron.value = s?.cron ?? '0 8 * * 1-5';
    f.sql.value = s?.sql ?? '';
    f.regenerate.checked = false;
    sqlBox.hidden = !s;
    cron.syncFromCron();
    node.hidden = false;
    onOpen?.();
    void cron.preview();
    f.name.focus();
  }
  function close() {
    node.hidden = true;
    editing = undefined;
  }

  async function submit() {
    if (!cron.valid()) throw new Error('The cron expression is not valid yet (see above).');
    const body = editorBody(f, editing);
    save.disabled = true;
    try {
      if (!editing) {
        say('Creating: the question is turned into SQL once…');
        const created = await api.post('/api/schedules', body);
        close();
        await onSaved(created, { created: true, sqlChanged: true });
      } else {
        const before = editing;
        const updated = await api.patch(`/api/schedules/${encodeURIComponent(before.id)}`, body);
        close();
        await onSaved(updated, { created: false, sqlChanged: updated.sql !== before.sql });
      }
    } finally {
      save.disabled = !cron.valid();
    }
  }

  node.addEventListener('submit', guard(submit));
  return { node, open, close };
}
