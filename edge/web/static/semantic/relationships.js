// The Semantic tab's Relationships: how two entities join, column to column.
import { el } from '../lib/dom.js';
import { code, empty, errorLine, field, input, qualified, select, small, table, tr, words } from './kit.js';

const REL_TYPES = [['many_to_one', 'many to one'], ['one_to_many', 'one to many'], ['one_to_one', 'one to one']];
const JOINS = [['LEFT', 'LEFT'], ['INNER', 'INNER'], ['RIGHT', 'RIGHT']];

/** The relationships sub-tab in `pane`; returns {load} (fresh from the server, then drawn). */
export function relationshipsPane(ctx, pane) {
  const { api, flash, state, act, entityById, entityLabel, loadAll } = ctx;
  const rf = {
    from: select({ id: 'sem-r-from' }, []), from_column: input({ id: 'sem-r-from-col', list: 'sem-r-from-cols', required: '', placeholder: 'customer_id' }),
    to: select({ id: 'sem-r-to' }, []), to_column: input({ id: 'sem-r-to-col', list: 'sem-r-to-cols', required: '', placeholder: 'id' }),
    type: select({ id: 'sem-r-type' }, REL_TYPES, 'many_to_one'), join: select({ id: 'sem-r-join' }, JOINS, 'LEFT'),
    name: input({ id: 'sem-r-name', placeholder: 'e.g. order customer (default: From to To)' }), description: input({ id: 'sem-r-desc', placeholder: 'optional' }),
  };
  const fromCols = el('datalist', { id: 'sem-r-from-cols' });
  const toCols = el('datalist', { id: 'sem-r-to-cols' });
  const columnsOf = (id) => {
    const e = entityById(Number(id));
    return e ? [...new Set([...e.columns.map((c) => c.name), ...words(e.primary_key)])] : [];
  };
  const fillCols = (list, id) => list.replaceChildren(...columnsOf(id).map((c) => el('option', { value: c })));
  rf.from.addEventListener('change', () => fillCols(fromCols, rf.from.value));
  rf.to.addEventListener('change', () => fillCols(toCols, rf.to.value));
  const rErr = errorLine('sem-r-error');
  const rForm = el('form', { id: 'sem-rel-form', class: 'sem-form' }, el('h3', { text: 'New relationship' }),
    el('div', { class: 'grid-form' }, field('From entity', rf.from), field('From column', rf.from_column), field('To entity', rf.to), field('To column', rf.to_column),
      field('Type', rf.type), field('Join', rf.join), field('Name', rf.name), field('Description', rf.description)),
    fromCols, toCols, rErr, el('div', { class: 'row' }, el('button', { type: 'submit', text: 'Create relationship' }),
      el('span', { class: 'muted', text: 'The model is told to join with exactly this condition, and to prefer LEFT JOIN unless told otherwise.' })));
  const rList = el('div', { id: 'sem-rel-list' });
  pane.append(rForm, rList);

  rForm.addEventListener('submit', act(async () => {
    const from = entityById(Number(rf.from.value));
    const to = entityById(Number(rf.to.value));
    if (!from || !to) throw new Error('Pick the entity on each side first (define entities in the Entities tab or with Auto-Discover).');
    const body = {
      name: rf.name.value.trim() || `${from.display_name} to ${to.display_name}`,
      from_entity_id: from.id, from_column: rf.from_column.value.trim(), to_entity_id: to.id, to_column: rf.to_column.value.trim(),
      relationship_type: rf.type.value, join_type: rf.join.value, description: rf.description.value.trim(),
    };
    const r = await api.post('/api/semantic/relationships', body);
    for (const k of ['from_column', 'to_column', 'name', 'description']) rf[k].value = '';
    await load();
    flash(`relationship ${r.name} created`);
  }, rErr));

  const joinText = (r) => {
    const a = entityById(r.from_entity_id);
    const b = entityById(r.to_entity_id);
    return `${a ? qualified(a) : entityLabel(r.from_entity_id)}.${r.from_column} = ${b ? qualified(b) : entityLabel(r.to_entity_id)}.${r.to_column}`;
  };

  function renderRelationships() {
    const opts = state.entities.map((e) => [String(e.id), `${e.display_name} (${qualified(e)})`]);
    for (const [s, list] of [[rf.from, fromCols], [rf.to, toCols]]) {
      const keep = s.value;
      s.replaceChildren(...opts.map(([v, label]) => el('option', { value: v, text: label })));
      if (opts.some(([v]) => v === keep)) s.value = keep;
      fillCols(list, s.value);
    }
    if (!state.relationships.length) {
      rList.replaceChildren(empty(state.entities.length
        ? 'No relationships yet: pick the two entities and the columns that join them above.'
        : 'Define entities first (Entities tab, or accept them in Auto-Discover); a relationship links a column of one entity to a column of another.'));
      return;
    }
    rList.replaceChildren(table(['Name', 'From', 'To', 'Type', 'Join condition', 'Description', ''], state.relationships.map((r) => tr([
      r.name, `${entityLabel(r.from_entity_id)}.${r.from_column}`, `${entityLabel(r.to_entity_id)}.${r.to_column}`, r.relationship_type.replaceAll('_', ' '),
      el('span', {}, el('span', { class: 'badge', text: r.join_type }), ' ', code(joinText(r))), r.description,
      small('Delete', act(async () => {
        if (!confirm(`Delete the relationship ${r.name}? The model will no longer be told how ${entityLabel(r.from_entity_id)} joins ${entityLabel(r.to_entity_id)}.`)) return;
        await api.del(`/api/semantic/relationships/${r.id}`);
        await load();
        flash(`relationship ${r.name} deleted`);
      })),
    ], { 'data-id': String(r.id) })), { id: 'sem-rel-table' }));
  }

  async function load() { await loadAll(); renderRelationships(); }

  return { load };
}
