// The Semantic tab's Metrics: named business figures with the exact SQL that computes them.
import { el } from '../lib/dom.js';
import { code, empty, errorLine, field, input, qualified, select, small, table, tr } from './kit.js';

const FORMATS = [['', 'plain'], ['currency', 'currency'], ['percentage', 'percentage']];

/** The metrics sub-tab in `pane`; returns {load} (fresh from the server, then drawn). */
export function metricsPane(ctx, pane) {
  const { api, flash, state, act, entityLabel, loadAll } = ctx;
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
  const mErr = errorLine('sem-m-error');
  const mForm = el('form', { id: 'sem-metric-form', class: 'sem-form' }, mTitle,
    el('div', { class: 'grid-form' }, field('Name', mf.name), field('Display name', mf.display_name), field('Format', mf.format_type), field('Category', mf.category), field('Entity', mf.entity_id), field('Description', mf.description)),
    field('SQL expression (an aggregate, used verbatim)', mf.sql_expression), mErr, el('div', { class: 'row' }, mSave, mCancel));
  const activeOnly = el('input', { type: 'checkbox', id: 'sem-m-active-only', checked: '' });
  const mList = el('div', { id: 'sem-metric-list' });
  pane.append(mForm, el('div', { class: 'row' }, el('label', { class: 'check' }, activeOnly, ' Active only'), el('span', { class: 'muted', text: 'Inactive metrics are kept but not given to the model.' })), mList);
  activeOnly.addEventListener('change', act(() => load()));

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
    const m = editing ? await api.patch(`/api/semantic/metrics/${editing}`, body) : await api.post('/api/semantic/metrics', body);
    resetMetricForm();
    await load();
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
          await api.post(`/api/semantic/metrics/${m.id}/${m.active ? 'deactivate' : 'activate'}`, {});
          await load();
          flash(`metric ${m.display_name} ${m.active ? 'deactivated: no longer given to the model' : 'activated'}`);
        })),
        small('Delete', act(async () => {
          if (!confirm(`Delete the metric ${m.display_name} (${m.name})?`)) return;
          await api.del(`/api/semantic/metrics/${m.id}`);
          if (state.editMetric === m.id) resetMetricForm();
          await load();
          flash(`metric ${m.display_name} deleted`);
        }))),
    ], { 'data-name': m.name })), { id: 'sem-metric-table' }));
  }

  async function load() {
    const [, shown] = await Promise.all([loadAll(), api.get(`/api/semantic/metrics?active_only=${activeOnly.checked}`)]);
    renderMetrics(shown.metrics);
  }

  return { load };
}
