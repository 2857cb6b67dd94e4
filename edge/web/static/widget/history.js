// The widgets' history and favourites (docs/ui.md, "Widgets"): the questions a person asked in
// this widget, newest first, and the ones they starred. A person signed in (the assistant
// gate's directory login, or a database login) keeps them on the server (/api/history, the
// session's secret in X-Session-ID, so they follow the person to another page or browser);
// anyone else (no session, or an anonymous auto session) in the host page's localStorage, under
// a key of this Cortado's. The list is a region of the panel opened by the History button of
// its header: every entry asks again, stars or unstars, or is forgotten, by its own buttons.

import { createHistory } from '../history.js';
import { el, icon } from '../lib/dom.js';

/**
 * The store the answer view writes to (mountAsk's `history`), switching with the session:
 * opts { base, headers, signedIn: () => boolean, key }. `onChange(fn)`: after every write.
 */
export function widgetHistory({ base, headers, signedIn, key }) {
  const local = createHistory({ key });
  let server;
  const store = () => (signedIn() ? (server ??= createHistory({ base, signedIn: true, headers, credentials: 'same-origin' })) : local);
  const listeners = new Set();
  const changed = () => { for (const fn of listeners) fn(); };
  return {
    get stored() { return store().stored; },
    async add(entry) { const e = await store().add(entry); changed(); return e; },
    list: (opts) => store().list(opts),
    favourites: () => store().favourites(),
    async setFavourite(id, on) { await store().setFavourite(id, on); changed(); },
    async remove(id) { await store().remove(id); changed(); },
    onChange(fn) { listeners.add(fn); },
  };
}

/**
 * The History region of a widget: `shell.onHistory` toggles it; `onAsk(question)` asks an
 * entry again. Returns { refresh(), hide() }.
 */
export function historyPanel(shell, history, { onAsk }) {
  const id = `${shell.panel.id}-history`;
  const favList = el('ul', { class: 'ctd-h-list ctd-h-favs', 'aria-labelledby': `${id}-fav` });
  const recentList = el('ul', { class: 'ctd-h-list ctd-h-recent', 'aria-labelledby': `${id}-recent` });
  const noFavs = el('p', { class: 'ctd-who', text: 'No favourites yet: star a question to keep it here.' });
  const noRecent = el('p', { class: 'ctd-who', text: 'No questions yet.' });
  const where = el('p', { class: 'ctd-who ctd-h-where' });
  const region = el('section', { id, class: 'ctd-history', role: 'region', 'aria-label': 'History and favourites', tabindex: '-1', hidden: true },
    el('h3', { id: `${id}-fav`, text: 'Favourites' }), noFavs, favList,
    el('h3', { id: `${id}-recent`, text: 'Recent questions' }), noRecent, recentList, where);
  shell.body.prepend(region);

  function item(e) {
    const ask = el('button', { type: 'button', class: 'ctd-h-q', title: 'Ask again', text: e.question });
    ask.addEventListener('click', () => { hide(); onAsk(e.question); });
    const star = el('button', {
      type: 'button', class: 'ctd-icon-btn ctd-h-star', 'aria-pressed': e.favourite ? 'true' : 'false',
      'aria-label': `Favourite: ${e.question.slice(0, 80)}`, title: e.favourite ? 'Remove from favourites' : 'Keep in favourites',
    }, icon('star'));
    star.addEventListener('click', () => { void act(() => history.setFavourite(e.id, !e.favourite), `.ctd-h-star[data-id="${e.id}"]`); });
    star.dataset.id = e.id;
    const forget = el('button', { type: 'button', class: 'ctd-icon-btn ctd-h-del', 'aria-label': `Forget: ${e.question.slice(0, 80)}`, title: 'Forget this question' }, icon('x'));
    forget.addEventListener('click', () => { void act(() => history.remove(e.id)); });
    return el('li', {}, ask, star, forget);
  }

  /** a change from the list: keep the keyboard where it was (the same star) or in the region */
  async function act(fn, refocus) {
    try {
      await fn();
    } catch (err) {
      shell.say(`Not saved: ${err.message}`, 'error', { code: err.code, requestId: err.requestId });
      return;
    }
    await refresh();
    const again = refocus ? recentList.querySelector(refocus) ?? favList.querySelector(refocus) : undefined;
    (again ?? region.querySelector('button') ?? shell.historyButton)?.focus();
  }

  async function refresh() {
    if (region.hidden) return;
    try {
      const [recent, favs] = await Promise.all([history.list({ limit: 20 }), history.favourites()]);
      favList.replaceChildren(...favs.map(item));
      recentList.replaceChildren(...recent.map(item));
      noFavs.hidden = favs.length > 0;
      noRecent.hidden = recent.length > 0;
      where.textContent = history.stored === 'server' ? 'Kept for you on the server.' : 'Kept in this browser only.';
    } catch (err) {
      shell.say(`The history could not be read: ${err.message}`, 'error', { code: err.code, requestId: err.requestId });
    }
  }

  function hide() {
    region.hidden = true;
    shell.historyButton.setAttribute('aria-expanded', 'false');
  }

  shell.onHistory(async () => {
    if (!region.hidden) { hide(); return; }
    region.hidden = false;
    shell.historyButton.setAttribute('aria-expanded', 'true');
    await refresh();
    (region.querySelector('button') ?? region).focus();
  }, id);
  history.onChange(() => { void refresh(); });
  return { refresh, hide };
}
