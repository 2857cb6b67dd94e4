// The Semantic tab's Auto-Discover: profile a schema's tables and accept the suggested entities, roles and relationships.
import { readableMessage } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { plural } from '../lib/format.js';
import { cell, code, empty, errorLine, field, input, qualified, select, table, tr, words } from './kit.js';

/** The discover sub-tab in `pane`; returns {load} (fresh from the server, then drawn). */
export function discoverPane(ctx, pane) {
  const { api, flash, state, act, entityById, loadAll } = ctx;
  const df = {
    schema: input({ id: 'sem-d-schema', required: '', placeholder: 'public' }),
    catalog: input({ id: 'sem-d-catalog', placeholder: 'optional' }),
    tables: input({ id: 'sem-d-tables', placeholder: 'optional: orders, customers' }),
  };
  const dGo = el('button', { type: 'submit', id: 'sem-d-run', text: 'Discover' });
  const dErr = errorLine('sem-d-error');
  const dForm = el('form', { id: 'sem-discover-form', class: 'sem-form' },
    el('div', { class: 'grid-form' }, field('Schema', df.schema), field('Catalog', df.catalog), field('Tables (comma-separated; all when empty)', df.tables)),
    dErr, el('div', { class: 'row' }, dGo, el('span', { class: 'muted', text: 'Profiles the tables (types, distinct values, nulls, ranges, samples) and suggests entities, their dimensions and metrics, and relationships. Nothing is saved until you accept.' })));
  const dOut = el('div', { id: 'sem-discover-results' });
  pane.append(dForm, dOut);
  /** per suggestion: the display-name input and the role select of each column */
  const dUi = new Map();

  dForm.addEventListener('submit', act(async () => {
    const body = { schema: df.schema.value.trim(), ...(df.catalog.value.trim() ? { catalog: df.catalog.value.trim() } : {}), ...(words(df.tables.value).length ? { tables: words(df.tables.value) } : {}) };
    dGo.disabled = true;
    dGo.textContent = 'Profiling…';
    try {
      state.discover = await api.post('/api/semantic/discover', body);
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
    const e = await api.post('/api/semantic/entities', acceptBody(s));
    state.entities.push(e);
    return e;
  }

  async function acceptRelationship(r) {
    const from = entityForTable(r.from_table);
    const to = entityForTable(r.to_table);
    if (!from || !to) throw new Error(`Accept ${from ? r.to_table : r.from_table} first: both ends of a relationship must be entities.`);
    if (sameRel(r, from, to)) return undefined;
    const rel = await api.post('/api/semantic/relationships', {
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
        failed.push(`${suggestionKey(s)}: ${readableMessage(err)}`);
      }
    }
    for (const r of d.relationships) {
      if (!entityForTable(r.from_table) || !entityForTable(r.to_table)) continue;
      try {
        if (await acceptRelationship(r)) rels += 1;
      } catch (err) {
        failed.push(`${r.name}: ${readableMessage(err)}`);
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

  async function load() { await loadAll(); renderDiscover(); }

  return { load };
}
