// The Semantic tab's Entities: a table (or view) with a business name, and its columns tagged as dimensions or metrics.
import { $, el } from '../lib/dom.js';
import { plural } from '../lib/format.js';
import { code, empty, errorLine, field, input, qualified, select, small, table, tr, words } from './kit.js';

const AGGS = ['sum', 'avg', 'min', 'max', 'count', 'count_distinct'];

/** The entities sub-tab in `pane`; returns {load} (fresh from the server, then drawn). */
export function entitiesPane(ctx, pane) {
  const { api, flash, state, act, entityById, loadAll } = ctx;
  const ef = {
    schema_name: input({ id: 'sem-e-schema', required: '', placeholder: 'public' }),
    table_name: input({ id: 'sem-e-table', required: '', placeholder: 'customers' }),
    display_name: input({ id: 'sem-e-display', required: '', placeholder: 'Customers' }),
    primary_key: input({ id: 'sem-e-pk', placeholder: 'id (comma-separated if several)' }),
    entity_type: select({ id: 'sem-e-type' }, [['table', 'table'], ['view', 'view']]),
    catalog: input({ id: 'sem-e-catalog', placeholder: 'empty for relational databases' }),
    synonyms: input({ id: 'sem-e-synonyms', placeholder: 'clients, buyers' }),
    description: el('textarea', { id: 'sem-e-desc', rows: '2', placeholder: 'what one row is, in business words' }),
  };
  const eTitle = el('h3', { text: 'New entity' });
  const eSave = el('button', { type: 'submit', id: 'sem-e-save', text: 'Create entity' });
  const eErr = errorLine('sem-e-error');
  const eForm = el('form', { id: 'sem-entity-form', class: 'sem-form', hidden: '' }, eTitle,
    el('div', { class: 'grid-form' }, field('Schema', ef.schema_name), field('Table', ef.table_name), field('Display name', ef.display_name),
      field('Primary key', ef.primary_key), field('Type', ef.entity_type), field('Catalog (optional)', ef.catalog), field('Synonyms (comma-separated)', ef.synonyms)),
    field('Description', ef.description), eErr,
    el('div', { class: 'row' }, eSave, el('button', { type: 'button', class: 'ghost', text: 'Cancel', onclick: () => closeEntityForm() })));
  const eList = el('div', { id: 'sem-entities-list' });
  const colsBox = el('div', { id: 'sem-columns' });
  pane.append(
    el('div', { class: 'row' }, el('button', { type: 'button', id: 'sem-e-new', text: 'New entity', onclick: () => openEntityForm() }),
      el('span', { class: 'muted', text: 'An entity gives a table a business name; its columns say what answers are grouped by (dimensions) and what is added up (metrics).' })),
    eForm, eList, colsBox);

  function openEntityForm(e) {
    state.editEntity = e?.id ?? null;
    eTitle.textContent = e ? `Edit ${e.display_name}` : 'New entity';
    eSave.textContent = e ? 'Save entity' : 'Create entity';
    for (const [k, n] of Object.entries(ef)) n.value = k === 'synonyms' ? (e?.synonyms ?? []).join(', ') : k === 'entity_type' ? (e?.entity_type ?? 'table') : (e?.[k] ?? '');
    eErr.hidden = true;
    eForm.hidden = false;
    (e ? ef.display_name : ef.schema_name).focus();
  }
  function closeEntityForm() {
    eForm.hidden = true;
    state.editEntity = null;
  }

  eForm.addEventListener('submit', act(async () => {
    const body = {
      catalog: ef.catalog.value.trim(), schema_name: ef.schema_name.value.trim(), table_name: ef.table_name.value.trim(),
      display_name: ef.display_name.value.trim(), description: ef.description.value.trim(), primary_key: ef.primary_key.value.trim(),
      entity_type: ef.entity_type.value, synonyms: words(ef.synonyms.value),
    };
    const editing = state.editEntity;
    const saved = editing ? await api.patch(`/api/semantic/entities/${editing}`, body) : await api.post('/api/semantic/entities', body);
    state.open = saved.id;
    closeEntityForm();
    await load();
    flash(editing ? `${saved.display_name} saved` : `${saved.display_name} created: add its columns below`);
  }, eErr));

  function renderEntities() {
    if (!state.entities.length) {
      eList.replaceChildren(empty('No entities yet. Press New entity to describe a table, or let Auto-Discover suggest them from a schema.'));
      colsBox.replaceChildren();
      return;
    }
    eList.replaceChildren(table(['Display name', 'Table', 'Type', 'Columns', ''], state.entities.map((e) => tr([
      e.display_name, qualified(e), e.entity_type, String(e.columns.length),
      el('span', { class: 'actions' },
        small('Columns', () => { state.open = e.id; renderEntities(); }),
        small('Edit', () => openEntityForm(e)),
        small('Delete', act(() => deleteEntity(e)))),
    ], { 'data-id': String(e.id), 'data-table': qualified(e), ...(e.id === state.open ? { class: 'selected' } : {}) })), { id: 'sem-entities-table' }));
    renderColumns();
  }

  async function deleteEntity(e) {
    const rels = state.relationships.filter((r) => r.from_entity_id === e.id || r.to_entity_id === e.id).length;
    const mets = state.metrics.filter((m) => m.entity_id === e.id).length;
    const text = `Delete the entity ${e.display_name} (${qualified(e)})?\n\nGoes with it: its ${plural(e.columns.length, 'column')} and ${plural(rels, 'relationship')} naming it.`
      + (mets ? `\nKept, but no longer tied to it: ${plural(mets, 'metric')}.` : '') + '\nThe table itself is not touched.';
    if (!confirm(text)) return;
    const r = await api.del(`/api/semantic/entities/${e.id}`);
    const gone = r.deleted_relationships?.length ?? rels;
    const detached = r.detached_metrics?.length ?? 0;
    if (state.open === e.id) state.open = null;
    await load();
    flash(`${e.display_name} deleted with ${plural(r.deleted_columns ?? e.columns.length, 'column')} and ${plural(gone, 'relationship')}${detached ? `; ${plural(detached, 'metric')} detached` : ''}`);
  }

  const aggSelect = (attrs, role, value) => {
    const s = select(attrs, [['', '—'], ...AGGS.map((a) => [a, a])], role === 'metric' ? (value ?? 'sum') : '');
    s.disabled = role !== 'metric';
    return s;
  };
  const roleSelect = (attrs, value, agg) => {
    const s = select(attrs, [['dimension', 'dimension'], ['metric', 'metric']], value);
    s.addEventListener('change', () => {
      agg.disabled = s.value !== 'metric';
      agg.value = s.value === 'metric' ? (agg.value || 'sum') : '';
    });
    return s;
  };

  function renderColumns() {
    const e = entityById(state.open);
    if (!e) return colsBox.replaceChildren();
    const cErr = errorLine('sem-c-error');
    const rowsOf = e.columns.map((c) => {
      const display = input({ 'aria-label': 'display name' }, c.display_name);
      const agg = aggSelect({ 'aria-label': 'aggregation', class: 'sem-c-agg' }, c.role, c.aggregation);
      const role = roleSelect({ 'aria-label': 'role', class: 'sem-c-role' }, c.role, agg);
      const syn = input({ 'aria-label': 'synonyms', placeholder: 'other words' }, c.synonyms.join(', '));
      const desc = input({ 'aria-label': 'description' }, c.description);
      return tr([el('span', {}, code(c.name), c.data_type ? el('span', { class: 'muted', text: ` ${c.data_type}` }) : null), display, role, agg, syn, desc,
        el('span', { class: 'actions' },
          small('Save', act(async () => {
            const body = { display_name: display.value.trim(), role: role.value, synonyms: words(syn.value), description: desc.value.trim(), ...(role.value === 'metric' && agg.value ? { aggregation: agg.value } : {}) };
            await api.patch(`/api/semantic/entities/${e.id}/columns/${c.id}`, body);
            await load();
            flash(`${e.display_name}.${c.name} saved`);
          }, cErr)),
          small('Delete', act(async () => {
            if (!confirm(`Delete the column ${c.name} from ${e.display_name}? Only its definition goes; the table is not touched.`)) return;
            await api.del(`/api/semantic/entities/${e.id}/columns/${c.id}`);
            await load();
            flash(`${e.display_name}.${c.name} deleted`);
          }, cErr)))], { 'data-column': c.name });
    });
    const add = { name: input({ id: 'sem-c-name', required: '', placeholder: 'column name' }), display: input({ id: 'sem-c-display', placeholder: 'display name' }) };
    add.agg = aggSelect({ id: 'sem-c-agg', 'aria-label': 'aggregation' }, 'dimension');
    add.role = roleSelect({ id: 'sem-c-role', 'aria-label': 'role' }, 'dimension', add.agg);
    add.synonyms = input({ id: 'sem-c-synonyms', placeholder: 'synonyms, comma-separated' });
    const addForm = el('form', { id: 'sem-column-form', class: 'row' }, add.name, add.display, add.role, add.agg, add.synonyms, el('button', { type: 'submit', text: 'Add column' }));
    addForm.addEventListener('submit', act(async () => {
      const body = { name: add.name.value.trim(), role: add.role.value, synonyms: words(add.synonyms.value), ...(add.display.value.trim() ? { display_name: add.display.value.trim() } : {}), ...(add.role.value === 'metric' && add.agg.value ? { aggregation: add.agg.value } : {}) };
      const c = await api.post(`/api/semantic/entities/${e.id}/columns`, body);
      await load();
      flash(`${e.display_name}.${c.name} added as a ${c.role}`);
      $('#sem-c-name')?.focus();
    }, cErr));
    colsBox.replaceChildren(
      el('h3', { text: `Columns of ${e.display_name} ` }, el('span', { class: 'muted', text: qualified(e) })),
      e.columns.length
        ? table(['Column', 'Display name', 'Role', 'Aggregation', 'Synonyms', 'Description', ''], rowsOf, { id: 'sem-columns-table' })
        : empty('No columns yet: add the ones people ask about. Dimensions are what answers are grouped by (region, month); metrics are numbers that are added up (amount).'),
      addForm, cErr);
  }

  async function load() { await loadAll(); renderEntities(); }

  return { load };
}
