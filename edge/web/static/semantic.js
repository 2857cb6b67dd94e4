// The admin panel's Semantic tab (SPEC.md "Pages"): sub-tabs Entities, Relationships, Metrics,
// Auto-Discover and How to Use, over /api/semantic/*, one module each under semantic/ (what they
// share: semantic/kit.js). admin.js hands in its client (the admin session's) and flash line.
import { readableMessage } from './lib/api.js';
import { $, el } from './lib/dom.js';
import { discoverPane } from './semantic/discover.js';
import { entitiesPane } from './semantic/entities.js';
import { howtoPane } from './semantic/howto.js';
import { semanticContext } from './semantic/kit.js';
import { metricsPane } from './semantic/metrics.js';
import { relationshipsPane } from './semantic/relationships.js';

const SUBS = [
  ['entities', 'Entities', entitiesPane], ['relationships', 'Relationships', relationshipsPane], ['metrics', 'Metrics', metricsPane],
  ['discover', 'Auto-Discover', discoverPane], ['howto', 'How to Use', howtoPane],
];

export function semanticTab({ api, flash }) {
  const root = $('#tab-semantic');
  const ctx = semanticContext({ api, flash });
  let current = 'entities';
  const nav = el('nav', { class: 'subtabs' }, ...SUBS.map(([k, label]) => el('button', { type: 'button', 'data-sub': k, text: label, onclick: ctx.act(() => showSub(k)) })));
  const panes = Object.fromEntries(SUBS.map(([k]) => [k, el('div', { class: 'subtab', id: `sem-${k}`, hidden: '' })]));
  root.replaceChildren(nav, ...Object.values(panes));
  const views = Object.fromEntries(SUBS.map(([k, , make]) => [k, make(ctx, panes[k])]));

  async function showSub(k) {
    current = k;
    for (const b of nav.querySelectorAll('button')) b.classList.toggle('active', b.dataset.sub === k);
    for (const [name, pane] of Object.entries(panes)) pane.hidden = name !== k;
    await views[k].load();
  }

  return {
    /** shows the current sub-tab, fresh from the server */
    async load() {
      try {
        await showSub(current);
      } catch (err) {
        flash(readableMessage(err), true);
      }
    },
  };
}
