// The Semantic tab's How to Use: what the layer is for, and the block the model is given.
import { el } from '../lib/dom.js';
import { plural } from '../lib/format.js';
import { small } from './kit.js';

/** The howto sub-tab in `pane`; returns {load} (fresh from the server, then drawn). */
export function howtoPane(ctx, pane) {
  const { api, act } = ctx;
  const ctxStatus = el('div', { id: 'sem-context-status' });
  const ctxBlock = el('pre', { class: 'sql', id: 'sem-context-block', hidden: '' });
  pane.append(
    el('div', { class: 'guide' },
      el('p', { text: 'The semantic layer tells the model what your tables mean, so questions in business words become the right SQL.' }),
      el('ul', {},
        el('li', {}, el('strong', { text: 'Entities' }), ': a table (or view) with a business name, a description, synonyms people use, its primary key, and its columns tagged as dimensions (what answers are grouped by) or metrics (numbers that are added up).'),
        el('li', {}, el('strong', { text: 'Relationships' }), ': how two entities join, column to column. The model is told to use exactly that join condition, and LEFT JOIN unless the relationship says otherwise.'),
        el('li', {}, el('strong', { text: 'Metrics' }), ': named business figures with the exact SQL that computes them. The model uses the expression as written instead of recalculating it. Only active metrics are given to it.'),
        el('li', {}, el('strong', { text: 'Auto-Discover' }), ': profiles a schema\'s tables and suggests entities, roles for their columns and relationships; accept what fits, then refine it in the other tabs.')),
      el('p', { class: 'muted', text: 'For each question, only the part of the layer relevant to it goes into the prompt, within the prompt budget. With no entity defined, or without the config database, nothing is added and the plain schema is used.' })),
    el('div', { class: 'row' }, el('h3', { text: 'What the model sees' }), el('span', { class: 'spacer' }), small('Refresh', act(() => load()))),
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

  async function load() { renderContext(await api.get('/api/semantic/context')); }

  return { load };
}
