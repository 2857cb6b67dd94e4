// The admin panel's Semantic tab (SPEC.md "Pages"): sub-tabs Entities, Relationships, Metrics,
// Auto-Discover and How to Use, over /api/semantic/*. admin.js hands in its helpers (el, api …).

const SUBS = [['entities', 'Entities'], ['relationships', 'Relationships'], ['metrics', 'Metrics'], ['discover', 'Auto-Discover'], ['howto', 'How to Use']];
const AGGS = ['sum', 'avg', 'min', 'max', 'count', 'count_distinct'];
const REL_TYPES = [['many_to_one', 'many to one'], ['one_to_many', 'one to many'], ['one_to_one', 'one to one']];
const JOINS = [['LEFT', 'LEFT'], ['INNER', 'INNER'], ['RIGHT', 'RIGHT']];
const FORMATS = [['', 'plain'], ['currency', 'currency'], ['percentage', 'percentage']];

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const words = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);
const qualified = (e) => [e.catalog, e.schema_name, e.table_name].filter(Boolean).join('.');
const short = (v, n = 40) => (v.length > n ? `${v.slice(0, n - 1)}…` : v);
/** a profiled value, short: timestamps without their fractions of a second */
const cell = (v) => (v === null ? 'NULL' : v === undefined ? '' : short(String(v).replace(/(\d\d:\d\d:\d\d)\.\d+/, '$1'), 32));

/** An API failure as a sentence a person can act on. */
export function explain(err) {
  if (err instanceof TypeError) return `Cannot reach the server (${err.message}): check that Cortado is running, then try again.`;
  const msg = String(err.detail ?? err.message).replace(/^\/([\w/]+): /, '$1: ');
  if (err.status === 401) return 'Your admin session has ended: sign in again.';
  if (err.status === 403) return `Not allowed: ${msg}`;
  if (err.status === 404) return `Not found: ${msg}`;
  if (err.status === 409) return `Already defined: ${msg}`;
  if (err.status === 413) return 'Too much at once: send fewer items.';
  if (err.status >= 500) return `The server could not do it (${err.code ?? `HTTP ${err.status}`}): ${msg}. Try again in a moment.`;
  return msg;
}

export function semanticTab({ $, el, api, flash }) {
  const root = $('#tab-semantic');
  const state = { sub: 'entities', entities: [], relationships: [], metrics: [], open: null, editEntity: null, editMetric: null, discover: null };

  // ---- small builders -------------------------------------------------------------------------
  const input = (attrs = {}, value) => { const n = el('input', attrs); if (value !== undefined) n.value = value; return n; };
  const select = (attrs, options, value) => {
    const s = el('select', attrs, ...options.map(([v, label]) => el('option', { value: v, text: label })));
    if (value !== undefined) s.value = value;
    return s;
  };
  const field = (label, control) => el('label', {}, label, control);
  const errorBox = (id) => el('p', { class: 'error', id, role: 'alert', hidden: '' });
  const empty = (text) => el('p', { class: 'muted sem-empty', text });
  const tr = (cells, attrs = {}) => el('tr', attrs, ...cells.map((c) => (c instanceof Node ? el('td', {}, c) : el('td', { text: c ?? '' }))));
  const table = (heads, trs, attrs = {}) => el('div', { class: 'scroll' }, el('table', attrs, el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { text: h })))), el('tbody', {}, ...trs)));
  const small = (text, onclick, attrs = {}) => el('button', { type: 'button', class: 'ghost small', text, onclick, ...attrs });
  const code = (text) => el('code', { text });
  const entityById = (id) => state.entities.find((e) => e.id === id);
  const entityLabel = (id) => entityById(id)?.display_name ?? `entity ${id}`;

  /** Runs fn; a failure goes to `box` (next to the form) or to the panel's flash line. */
  const act = (fn, box) => async (e) => {
    e?.preventDefault?.();
    if (box) box.hidden = true;
    try {
      await fn(e);
    } catch (err) {
      if (box) {
        box.textContent = explain(err);
        box.hidden = false;
      } else flash(explain(err), true);
    }
  };

  // ---- layout ---------------------------------------------------------------------------------
  const nav = el('nav', { class: 'subtabs' }, ...SUBS.map(([k, label]) => el('button', { type: 'button', 'data-sub': k, text: label, onclick: act(() => showSub(k)) })));
  const panes = Object.fromEntries(SUBS.map(([k]) => [k, el('div', { class: 'subtab', id: `sem-${k}`, hidden: '' })]));
  root.replaceChildren(nav, ...Object.values(panes));

  async function loadAll() {
    const [e, r, m] = await Promise.all([
      api('GET', '/api/semantic/entities'),
      api('GET', '/api/semantic/relationships'),
      api('GET', '/api/semantic/metrics?active_only=false'),
    ]);
    state.entities = e.entities;
    state.relationships = r.relationships;
    state.metrics = m.metrics;
  }

  async function showSub(k) {
    state.sub = k;
    for (const b of nav.querySelectorAll('button')) b.classList.toggle('active', b.dataset.sub === k);
    for (const [name, pane] of Object.entries(panes)) pane.hidden = name !== k;
    await SUB_LOADERS[k]();
  }

  // ---- Entities -------------------------------------------------------------------------------
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
  const eErr = errorBox('sem-e-error');
  const eForm = el('form', { id: 'sem-entity-form', class: 'sem-form', hidden: '' }, eTitle,
    el('div', { class: 'grid-form' }, field('Schema', ef.schema_name), field('Table', ef.table_name), field('Display name', ef.display_name),
      field('Primary key', ef.primary_key), field('Type', ef.entity_type), field('Catalog (optional)', ef.catalog), field('Synonyms (comma-separated)', ef.synonyms)),
    field('Description', ef.description), eErr,
    el('div', { class: 'row' }, eSave, el('button', { type: 'button', class: 'ghost', text: 'Cancel', onclick: () => closeEntityForm() })));
  const eList = el('div', { id: 'sem-entities-list' });
  const colsBox = el('div', { id: 'sem-columns' });
  panes.entities.append(
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
    const saved = editing ? await api('PATCH', `/api/semantic/entities/${editing}`, body) : await api('POST', '/api/semantic/entities', body);
    state.open = saved.id;
    closeEntityForm();
    await SUB_LOADERS.entities();
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
    const r = await api('DELETE', `/api/semantic/entities/${e.id}`);
    const gone = r.deleted_relationships?.length ?? rels;
    const detached = r.detached_metrics?.length ?? 0;
    if (state.open === e.id) state.open = null;
    await SUB_LOADERS.entities();
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
    const cErr = errorBox('sem-c-error');
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
            await api('PATCH', `/api/semantic/entities/${e.id}/columns/${c.id}`, body);
            await SUB_LOADERS.entities();
            flash(`${e.display_name}.${c.name} saved`);
          }, cErr)),
          small('Delete', act(async () => {
            if (!confirm(`Delete the column ${c.name} from ${e.display_name}? Only its definition goes; the table is not touched.`)) return;
            await api('DELETE', `/api/semantic/entities/${e.id}/columns/${c.id}`);
            await SUB_LOADERS.entities();
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
      const c = await api('POST', `/api/semantic/entities/${e.id}/columns`, body);
      await SUB_LOADERS.entities();
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

  // ---- Relationships --------------------------------------------------------------------------
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
  const rErr = errorBox('sem-r-error');
  const rForm = el('form', { id: 'sem-rel-form', class: 'sem-form' }, el('h3', { text: 'New relationship' }),
    el('div', { class: 'grid-form' }, field('From entity', rf.from), field('From column', rf.from_column), field('To entity', rf.to), field('To column', rf.to_column),
      field('Type', rf.type), field('Join', rf.join), field('Name', rf.name), field('Description', rf.description)),
    fromCols, toCols, rErr, el('div', { class: 'row' }, el('button', { type: 'submit', text: 'Create relationship' }),
      el('span', { class: 'muted', text: 'The model is told to join with exactly this condition, and to prefer LEFT JOIN unless told otherwise.' })));
  const rList = el('div', { id: 'sem-rel-list' });
  panes.relationships.append(rForm, rList);

  rForm.addEventListener('submit', act(async () => {
    const from = entityById(Number(rf.from.value));
    const to = entityById(Number(rf.to.value));
    if (!from || !to) throw new Error('Pick the entity on each side first (define entities in the Entities tab or with Auto-Discover).');
    const body = {
      name: rf.name.value.trim() || `${from.display_name} to ${to.display_name}`,
      from_entity_id: from.id, from_column: rf.from_column.value.trim(), to_entity_id: to.id, to_column: rf.to_column.value.trim(),
      relationship_type: rf.type.value, join_type: rf.join.value, description: rf.description.value.trim(),
    };
    const r = await api('POST', '/api/semantic/relationships', body);
    for (const k of ['from_column', 'to_column', 'name', 'description']) rf[k].value = '';
    await SUB_LOADERS.relationships();
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
        await api('DELETE', `/api/semantic/relationships/${r.id}`);
        await SUB_LOADERS.relationships();
        flash(`relationship ${r.name} deleted`);
      })),
    ], { 'data-id': String(r.id) })), { id: 'sem-rel-table' }));
  }

  // ---- Metrics --------------------------------------------------------------------------------
  const mf = {
    name: input({ id: 'sem-m-name', required: '', placeholder: 'total_revenue', pattern: '[A-Za-z_][A-Za-z0-9_]*', title: 'letters, digits and _, not starting with a digit' }),
    display_name: input({ id: 'sem-m-display', required: '', placeholder: 'Total revenue' }),
    format_type: select({ id: 'sem-m-format' }, FORMATS, ''),
    category: input({ id: 'sem-m-category', placeholder: 'e.g. Sales' }),
    entity_id: select({ id: 'sem-m-entity' }, [['', '(none)']]),
    sql_expression: el('textarea', { id: 'sem-m-sql', rows: '2', required: '', placeholder: 'SUM(orders.amount)' }),
    description: input({ id: 'sem-m-desc', placeholder: 'what it measures' }),
  };
  const mTitle = el('h3', { text: 'New metric' });
  const mSave = el('button', { type: 'submit', id: 'sem-m-save', text: 'Create metric' });
  const mCancel = el('button', { type: 'button', class: 'ghost', text: 'Cancel', hidden: '', onclick: () => resetMetricForm() });
  const mErr = errorBox('sem-m-error');
  const mForm = el('form', { id: 'sem-metric-form', class: 'sem-form' }, mTitle,
    el('div', { class: 'grid-form' }, field('Name', mf.name), field('Display name', mf.display_name), field('Format', mf.format_type), field('Category', mf.category), field('Entity', mf.entity_id), field('Description', mf.description)),
    field('SQL expression (an aggregate, used verbatim)', mf.sql_expression), mErr, el('div', { class: 'row' }, mSave, mCancel));
  const activeOnly = el('input', { type: 'checkbox', id: 'sem-m-active-only', checked: '' });
  const mList = el('div', { id: 'sem-metric-list' });
  panes.metrics.append(mForm, el('div', { class: 'row' }, el('label', { class: 'check' }, activeOnly, ' Active only'), el('span', { class: 'muted', text: 'Inactive metrics are kept but not given to the model.' })), mList);
  activeOnly.addEventListener('change', act(() => SUB_LOADERS.metrics()));

  function resetMetricForm(m) {
    state.editMetric = m?.id ?? null;
    mTitle.textContent = m ? `Edit ${m.display_name}` : 'New metric';
    mSave.textContent = m ? 'Save metric' : 'Create metric';
    mCancel.hidden = !m;
    for (const [k, n] of Object.entries(mf)) n.value = k === 'entity_id' ? String(m?.entity_id ?? '') : (m?.[k] ?? '');
    mErr.hidden = true;
    if (m) mf.display_name.focus();
  }

  mForm.addEventListener('submit', act(async () => {
    const editing = state.editMetric;
    const entity = mf.entity_id.value ? Number(mf.entity_id.value) : null;
    const body = {
      name: mf.name.value.trim(), display_name: mf.display_name.value.trim(), sql_expression: mf.sql_expression.value.trim(),
      format_type: mf.format_type.value, category: mf.category.value.trim(), description: mf.description.value.trim(),
      ...(entity !== null || editing ? { entity_id: entity } : {}),
    };
    const m = editing ? await api('PATCH', `/api/semantic/metrics/${editing}`, body) : await api('POST', '/api/semantic/metrics', body);
    resetMetricForm();
    await SUB_LOADERS.metrics();
    flash(`metric ${m.display_name} ${editing ? 'saved' : 'created'}`);
  }, mErr));

  function renderMetrics(list) {
    const keep = mf.entity_id.value;
    mf.entity_id.replaceChildren(el('option', { value: '', text: '(none)' }), ...state.entities.map((e) => el('option', { value: String(e.id), text: `${e.display_name} (${qualified(e)})` })));
    mf.entity_id.value = state.entities.some((e) => String(e.id) === keep) ? keep : '';
    if (!list.length) {
      mList.replaceChildren(empty(activeOnly.checked && state.metrics.length
        ? 'No active metrics. Untick Active only to see the inactive ones.'
        : 'No metrics yet: name a business figure and the exact SQL that computes it, e.g. SUM(orders.amount).'));
      return;
    }
    mList.replaceChildren(table(['Name', 'Display name', 'SQL', 'Format', 'Category', 'Entity', 'Status', ''], list.map((m) => tr([
      code(m.name), m.display_name, el('code', { class: 'wrap', text: m.sql_expression }), m.format_type || 'plain', m.category, m.entity_id ? entityLabel(m.entity_id) : '—',
      el('span', { class: m.active ? 'badge ok' : 'badge off', text: m.active ? 'active' : 'inactive' }),
      el('span', { class: 'actions' },
        small('Edit', () => resetMetricForm(m)),
        small(m.active ? 'Deactivate' : 'Activate', act(async () => {
          await api('POST', `/api/semantic/metrics/${m.id}/${m.active ? 'deactivate' : 'activate'}`, {});
          await SUB_LOADERS.metrics();
          flash(`metric ${m.display_name} ${m.active ? 'deactivated: no longer given to the model' : 'activated'}`);
        })),
        small('Delete', act(async () => {
          if (!confirm(`Delete the metric ${m.display_name} (${m.name})?`)) return;
          await api('DELETE', `/api/semantic/metrics/${m.id}`);
          if (state.editMetric === m.id) resetMetricForm();
          await SUB_LOADERS.metrics();
          flash(`metric ${m.display_name} deleted`);
        }))),
    ], { 'data-name': m.name })), { id: 'sem-metric-table' }));
  }

  // ---- Auto-Discover --------------------------------------------------------------------------
  const df = {
    schema: input({ id: 'sem-d-schema', required: '', placeholder: 'public' }),
    catalog: input({ id: 'sem-d-catalog', placeholder: 'optional' }),
    tables: input({ id: 'sem-d-tables', placeholder: 'optional: orders, customers' }),
  };
  const dGo = el('button', { type: 'submit', id: 'sem-d-run', text: 'Discover' });
  const dErr = errorBox('sem-d-error');
  const dForm = el('form', { id: 'sem-discover-form', class: 'sem-form' },
    el('div', { class: 'grid-form' }, field('Schema', df.schema), field('Catalog', df.catalog), field('Tables (comma-separated; all when empty)', df.tables)),
    dErr, el('div', { class: 'row' }, dGo, el('span', { class: 'muted', text: 'Profiles the tables (types, distinct values, nulls, ranges, samples) and suggests entities, their dimensions and metrics, and relationships. Nothing is saved until you accept.' })));
  const dOut = el('div', { id: 'sem-discover-results' });
  panes.discover.append(dForm, dOut);
  /** per suggestion: the display-name input and the role select of each column */
  const dUi = new Map();

  dForm.addEventListener('submit', act(async () => {
    const body = { schema: df.schema.value.trim(), ...(df.catalog.value.trim() ? { catalog: df.catalog.value.trim() } : {}), ...(words(df.tables.value).length ? { tables: words(df.tables.value) } : {}) };
    dGo.disabled = true;
    dGo.textContent = 'Profiling…';
    try {
      state.discover = await api('POST', '/api/semantic/discover', body);
      await loadAll();
    } finally {
      dGo.disabled = false;
      dGo.textContent = 'Discover';
    }
    renderDiscover();
  }, dErr));

  const suggestionKey = (s) => [s.catalog, s.schema_name, s.table_name].filter(Boolean).join('.');
  const definedFor = (s) => state.entities.find((e) => (e.catalog ?? '') === (s.catalog ?? '') && e.schema_name === s.schema_name && e.table_name === s.table_name)
    ?? (s.existing_entity_id ? entityById(s.existing_entity_id) : undefined);
  const entityForTable = (name) => state.entities.find((e) => `${e.schema_name}.${e.table_name}` === name || qualified(e) === name);
  const sameRel = (r, from, to) => state.relationships.some((x) => x.from_entity_id === from.id && x.to_entity_id === to.id && x.from_column === r.from_column && x.to_column === r.to_column);

  function acceptBody(s) {
    const ui = dUi.get(suggestionKey(s));
    const columns = [];
    for (const c of s.columns) {
      const role = ui?.roles.get(c.name)?.value ?? c.suggested_role;
      if (role !== 'dimension' && role !== 'metric') continue;
      columns.push({
        name: c.name, role, ...(role === 'metric' ? { aggregation: c.suggested_aggregation ?? 'sum' } : {}),
        ...(c.data_type ? { data_type: c.data_type.slice(0, 200) } : {}), ...(c.comment ? { description: c.comment.slice(0, 2000) } : {}),
      });
    }
    return {
      catalog: s.catalog ?? '', schema_name: s.schema_name, table_name: s.table_name, display_name: (ui?.display.value.trim() || s.display_name),
      description: s.description ?? '', primary_key: s.primary_key ?? '', entity_type: s.entity_type ?? 'table', columns,
    };
  }

  async function acceptEntity(s) {
    const e = await api('POST', '/api/semantic/entities', acceptBody(s));
    state.entities.push(e);
    return e;
  }

  async function acceptRelationship(r) {
    const from = entityForTable(r.from_table);
    const to = entityForTable(r.to_table);
    if (!from || !to) throw new Error(`Accept ${from ? r.to_table : r.from_table} first: both ends of a relationship must be entities.`);
    if (sameRel(r, from, to)) return undefined;
    const rel = await api('POST', '/api/semantic/relationships', {
      name: r.name, from_entity_id: from.id, from_column: r.from_column, to_entity_id: to.id, to_column: r.to_column,
      relationship_type: r.relationship_type, join_type: r.join_type,
    });
    state.relationships.push(rel);
    return rel;
  }

  async function acceptAll() {
    const d = state.discover;
    const failed = [];
    let entities = 0;
    let rels = 0;
    for (const s of d.entities) {
      if (definedFor(s)) continue;
      try {
        await acceptEntity(s);
        entities += 1;
      } catch (err) {
        failed.push(`${suggestionKey(s)}: ${explain(err)}`);
      }
    }
    for (const r of d.relationships) {
      if (!entityForTable(r.from_table) || !entityForTable(r.to_table)) continue;
      try {
        if (await acceptRelationship(r)) rels += 1;
      } catch (err) {
        failed.push(`${r.name}: ${explain(err)}`);
      }
    }
    await loadAll();
    renderDiscover();
    flash(`accepted ${plural(entities, 'entity', 'entities')} and ${plural(rels, 'relationship')}`);
    if (failed.length) throw new Error(`Some could not be accepted. ${failed.join(' · ')}`);
  }

  function profileRows(s, ui) {
    return s.columns.map((c) => {
      const role = select({ 'aria-label': `role of ${c.name}`, 'data-col': c.name }, [['dimension', 'dimension'], ['metric', 'metric'], ['none', 'skip']], ui.roles.get(c.name)?.value ?? c.suggested_role);
      ui.roles.set(c.name, role);
      const nulls = c.null_fraction === undefined ? '—' : `${(c.null_fraction * 100).toFixed(c.null_fraction > 0 && c.null_fraction < 0.01 ? 2 : 0)}%`;
      const samples = c.sample_values.slice(0, 5).map(cell).join(', ');
      return tr([
        el('span', {}, code(c.name), c.nullable ? null : el('span', { class: 'muted', text: ' not null' })), c.data_type,
        c.distinct_count === undefined ? '—' : String(Math.round(c.distinct_count)), nulls, c.min === undefined ? '—' : cell(c.min), c.max === undefined ? '—' : cell(c.max),
        el('span', { class: 'muted', title: c.source === 'statistics' ? 'from the database statistics' : 'from a bounded sample', text: (c.masked ? '(masked) ' : '') + samples }),
        role, el('span', { class: 'muted', text: `${c.suggested_role}${c.suggested_aggregation ? ` (${c.suggested_aggregation})` : ''}: ${c.reason}` }),
      ], { 'data-column': c.name });
    });
  }

  function renderDiscover() {
    const d = state.discover;
    if (!d) {
      dOut.replaceChildren(empty('Name a schema (and the tables, if not all of them) and press Discover. Accept a suggested entity to define it with its columns in one click.'));
      return;
    }
    const open = d.entities.filter((s) => !definedFor(s));
    const summary = el('p', { class: 'muted', id: 'sem-d-summary', text: `${plural(d.entities.length, 'table')} profiled in ${Math.round(d.duration_ms)} ms; ${open.length} not yet defined.${d.missing.length ? ` Not found or not visible: ${d.missing.join(', ')}.` : ''}` });
    const acceptAllBtn = el('button', { type: 'button', id: 'sem-d-accept-all', text: 'Accept all', onclick: act(acceptAll, dErr) });
    acceptAllBtn.disabled = open.length === 0 && !d.relationships.some((r) => { const a = entityForTable(r.from_table); const b = entityForTable(r.to_table); return a && b && !sameRel(r, a, b); });
    if (!d.entities.length) {
      dOut.replaceChildren(summary, empty('No tables found there. Check the schema name (and the catalog), and that Cortado\'s database role can read it.'));
      return;
    }
    const cards = d.entities.map((s) => {
      const key = suggestionKey(s);
      const ui = dUi.get(key) ?? { display: input({ 'aria-label': `display name of ${key}`, class: 'sem-d-display' }, s.display_name), roles: new Map() };
      dUi.set(key, ui);
      const defined = definedFor(s);
      ui.display.disabled = Boolean(defined);
      const accept = el('button', { type: 'button', class: 'small sem-d-accept', text: defined ? 'Defined' : 'Accept', onclick: act(async () => {
        const e = await acceptEntity(s);
        await loadAll();
        renderDiscover();
        flash(`${e.display_name} defined with ${plural(e.columns.length, 'column')}`);
      }, dErr) });
      accept.disabled = Boolean(defined);
      return el('div', { class: `suggestion${defined ? ' defined' : ''}`, 'data-table': key },
        el('header', {}, el('strong', { text: key }), ui.display,
          s.row_count === undefined ? null : el('span', { class: 'muted', text: `about ${Math.round(s.row_count)} rows` }),
          s.primary_key ? el('span', { class: 'muted', text: `key ${s.primary_key}` }) : null,
          defined ? el('span', { class: 'badge ok', text: `already defined${defined.display_name ? ` as ${defined.display_name}` : ''}` }) : null,
          el('span', { class: 'spacer' }), accept),
        table(['Column', 'Type', 'Distinct', 'Nulls', 'Min', 'Max', 'Samples', 'Role', 'Suggested because'], profileRows(s, ui)));
    });
    const relTable = d.relationships.length
      ? table(['Name', 'From', 'To', 'Type', 'Join', 'Evidence', ''], d.relationships.map((r) => {
        const a = entityForTable(r.from_table);
        const b = entityForTable(r.to_table);
        const done = a && b && sameRel(r, a, b);
        const btn = el('button', { type: 'button', class: 'small ghost', text: done ? 'Accepted' : 'Accept', onclick: act(async () => {
          const rel = await acceptRelationship(r);
          await loadAll();
          renderDiscover();
          if (rel) flash(`relationship ${rel.name} created`);
        }, dErr) });
        btn.disabled = Boolean(done) || !a || !b;
        if (!a || !b) btn.title = 'accept both tables first';
        return tr([r.name, `${r.from_table}.${r.from_column}`, `${r.to_table}.${r.to_column}`, r.relationship_type.replaceAll('_', ' '), r.join_type,
          `${r.evidence.replace('_', ' ')} (${Math.round(r.confidence * 100)}%)`, btn], { 'data-name': r.name });
      }), { id: 'sem-d-rels' })
      : empty('No relationships suggested: no foreign keys, matching column names or overlapping values were found.');
    dOut.replaceChildren(el('div', { class: 'row' }, summary, el('span', { class: 'spacer' }), acceptAllBtn), ...cards, el('h3', { text: 'Suggested relationships' }), relTable);
  }

  // ---- How to Use -----------------------------------------------------------------------------
  const ctxStatus = el('div', { id: 'sem-context-status' });
  const ctxBlock = el('pre', { class: 'sql', id: 'sem-context-block', hidden: '' });
  panes.howto.append(
    el('div', { class: 'guide' },
      el('p', { text: 'The semantic layer tells the model what your tables mean, so questions in business words become the right SQL.' }),
      el('ul', {},
        el('li', {}, el('strong', { text: 'Entities' }), ': a table (or view) with a business name, a description, synonyms people use, its primary key, and its columns tagged as dimensions (what answers are grouped by) or metrics (numbers that are added up).'),
        el('li', {}, el('strong', { text: 'Relationships' }), ': how two entities join, column to column. The model is told to use exactly that join condition, and LEFT JOIN unless the relationship says otherwise.'),
        el('li', {}, el('strong', { text: 'Metrics' }), ': named business figures with the exact SQL that computes them. The model uses the expression as written instead of recalculating it. Only active metrics are given to it.'),
        el('li', {}, el('strong', { text: 'Auto-Discover' }), ': profiles a schema\'s tables and suggests entities, roles for their columns and relationships; accept what fits, then refine it in the other tabs.')),
      el('p', { class: 'muted', text: 'For each question, only the part of the layer relevant to it goes into the prompt, within the prompt budget. With no entity defined, or without the config database, nothing is added and the plain schema is used.' })),
    el('div', { class: 'row' }, el('h3', { text: 'What the model sees' }), el('span', { class: 'spacer' }), small('Refresh', act(() => SUB_LOADERS.howto()))),
    ctxStatus, ctxBlock);

  function renderContext(c) {
    const counts = `${plural(c.entities.length, 'entity', 'entities')}, ${plural(c.relationships.length, 'relationship')} and ${plural(c.metrics.length, 'active metric')} defined; stored in ${c.storage === 'postgresql' ? 'the config database (PostgreSQL)' : 'memory'}.`;
    const parts = [el('p', { class: 'muted', text: counts })];
    if (c.injected) parts.push(el('p', {}, el('span', { class: 'badge ok', text: 'injected' }), ' This block is added to prompts (for each question, the part relevant to it):'));
    else {
      parts.push(el('p', { class: 'explanation', id: 'sem-context-reason' }, el('span', { class: 'badge off', text: 'not injected' }), ` ${c.reason ?? 'The block is not added to prompts.'}`));
      if (c.storage === 'memory') {
        parts.push(el('p', { class: 'explanation', id: 'sem-memory-note', text: 'Memory mode: config_db is off, so the layer lives in this process\'s memory. You can define and review it here, but it is lost on restart and never added to prompts. Enable config_db (PostgreSQL) to keep it and have it injected.' }));
      }
    }
    ctxStatus.replaceChildren(...parts);
    ctxBlock.textContent = c.block;
    ctxBlock.hidden = !c.block;
  }

  const SUB_LOADERS = {
    async entities() { await loadAll(); renderEntities(); },
    async relationships() { await loadAll(); renderRelationships(); },
    async metrics() {
      const [, shown] = await Promise.all([loadAll(), api('GET', `/api/semantic/metrics?active_only=${activeOnly.checked}`)]);
      renderMetrics(shown.metrics);
    },
    async discover() { await loadAll(); renderDiscover(); },
    async howto() { renderContext(await api('GET', '/api/semantic/context')); },
  };

  return {
    /** shows the current sub-tab, fresh from the server */
    async load() {
      try {
        await showSub(state.sub);
      } catch (err) {
        flash(explain(err), true);
      }
    },
  };
}
