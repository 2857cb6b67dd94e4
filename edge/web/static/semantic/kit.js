// What the Semantic tab's sub-tabs share: small form and table builders, the text helpers, and
// the tab's context (the client, the flash line, the layer as last read, and `act`, which runs an
// action and says its failure as a sentence next to the form or on the flash line).
import { readableMessage } from '../lib/api.js';
import { el } from '../lib/dom.js';

export const words = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
export const qualified = (e) => [e.catalog, e.schema_name, e.table_name].filter(Boolean).join('.');
const short = (v, n = 40) => (v.length > n ? `${v.slice(0, n - 1)}…` : v);
/** a profiled value, short: timestamps without their fractions of a second */
export const cell = (v) => (v === null ? 'NULL' : v === undefined ? '' : short(String(v).replace(/(\d\d:\d\d:\d\d)\.\d+/, '$1'), 32));

export const input = (attrs = {}, value) => { const n = el('input', attrs); if (value !== undefined) n.value = value; return n; };
export const select = (attrs, options, value) => {
  const s = el('select', attrs, ...options.map(([v, label]) => el('option', { value: v, text: label })));
  if (value !== undefined) s.value = value;
  return s;
};
export const field = (label, control) => el('label', {}, label, control);
/** the line under a form where its failure is said */
export const errorLine = (id) => el('p', { class: 'error', id, role: 'alert', hidden: '' });
export const empty = (text) => el('p', { class: 'muted sem-empty', text });
export const tr = (cells, attrs = {}) => el('tr', attrs, ...cells.map((c) => (c instanceof Node ? el('td', {}, c) : el('td', { text: c ?? '' }))));
// a wide table scrolls inside its card; the scrolling box takes the focus so a keyboard can scroll it
export const table = (heads, trs, attrs = {}) => el('div', { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': `Table: ${heads.filter(Boolean).join(', ')}` }, el('table', attrs, el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { text: h })))), el('tbody', {}, ...trs)));
export const small = (text, onclick, attrs = {}) => el('button', { type: 'button', class: 'ghost small', text, onclick, ...attrs });
export const code = (text) => el('code', { text });

/** The tab's shared context: {api, flash, state, act, entityById, entityLabel, loadAll}. */
export function semanticContext({ api, flash }) {
  const state = { entities: [], relationships: [], metrics: [] };
  const entityById = (id) => state.entities.find((e) => e.id === id);
  return {
    api, flash, state, entityById,
    entityLabel: (id) => entityById(id)?.display_name ?? `entity ${id}`,
    /** Runs fn; a failure goes to `box` (next to the form) or to the panel's flash line. */
    act: (fn, box) => async (e) => {
      e?.preventDefault?.();
      if (box) box.hidden = true;
      try {
        await fn(e);
      } catch (err) {
        if (box) {
          box.textContent = readableMessage(err);
          box.hidden = false;
        } else flash(readableMessage(err), true);
      }
    },
    /** the whole layer, fresh: entities (with their columns), relationships, every metric */
    async loadAll() {
      const [e, r, m] = await Promise.all([
        api.get('/api/semantic/entities'),
        api.get('/api/semantic/relationships'),
        api.get('/api/semantic/metrics?active_only=false'),
      ]);
      state.entities = e.entities;
      state.relationships = r.relationships;
      state.metrics = m.metrics;
    },
  };
}
