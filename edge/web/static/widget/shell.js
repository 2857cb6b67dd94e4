// The frame every embedded widget lives in: a host element pinned to a corner of the page
// (`all: initial`, set important inline, so the page's CSS cannot restyle it), an open shadow
// root holding the widget's own styles (a constructed stylesheet, which a page's strict CSP
// does not block; a <style> element where those are unsupported), a launcher button and a
// panel (role=dialog) with a header, a message line and a body the widget fills.

import { adoptStyles, el, icon } from '../lib/dom.js';

const LIGHT = `color-scheme: light;
  --ctd-bg: #faf7f3; --ctd-card: #fff; --ctd-ink: #2b2118; --ctd-muted: #6e5e4f; --ctd-line: #d9c9b8; --ctd-field: #d9cbbb;
  --ctd-accent: #8a5a2e; --ctd-on-accent: #fff; --ctd-accent-ink: #6b4423; --ctd-input: #fff; --ctd-link: #0b57d0; --ctd-focus: #1a73e8;
  --ctd-soft: #f6f1ea; --ctd-chip: #f4ece3; --ctd-chip-ink: #5b3a21; --ctd-code-bg: #1f1a16; --ctd-code-ink: #f3e9dd;
  --ctd-err: #b3261e; --ctd-err-bg: #fdecea; --ctd-ok: #2e7d32; --ctd-warn: #8f5500; --ctd-info: #4e79a7;`;
const DARK = `color-scheme: dark;
  --ctd-bg: #1b1612; --ctd-card: #262019; --ctd-ink: #efe6dc; --ctd-muted: #b5a595; --ctd-line: #4a3e33; --ctd-field: #55483c;
  --ctd-accent: #e0b98f; --ctd-on-accent: #1b1612; --ctd-accent-ink: #e0b98f; --ctd-input: #1f1a15; --ctd-link: #8ab4f8; --ctd-focus: #8ab4f8;
  --ctd-soft: #2f271f; --ctd-chip: #3d332a; --ctd-chip-ink: #f0e2d2; --ctd-code-bg: #120e0b; --ctd-code-ink: #f3e9dd;
  --ctd-err: #f0b0a8; --ctd-err-bg: #3a1f1c; --ctd-ok: #8fd19e; --ctd-warn: #f2c178; --ctd-info: #8ab4f8;`;

// The widget's own palettes (the --ctd-* properties the answer view reads too, inherited into its
// shadow root): light, or dark when the host page's visitor prefers it (prefers-color-scheme), or
// as the tag's data-theme says ("light" | "dark"; "auto", the default, follows the preference).
export const WIDGET_CSS = `
:host { all: initial; }
*, *::before, *::after { box-sizing: border-box; }
.ctd-w { ${LIGHT} }
@media (prefers-color-scheme: dark) { .ctd-w:not([data-theme=light]) { ${DARK} } }
.ctd-w[data-theme=dark] { ${DARK} }
.ctd-w { font: 14px/1.45 var(--ctd-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif); color: var(--ctd-ink, #2b2118); }
.ctd-launch { position: fixed; bottom: 16px; width: 56px; height: 56px; border-radius: 50%; border: 0; cursor: pointer;
  background: var(--ctd-accent, #8a5a2e); color: var(--ctd-on-accent, #ffffff); box-shadow: 0 4px 14px rgba(0,0,0,.25);
  display: inline-flex; align-items: center; justify-content: center; z-index: 2147483000; }
.ctd-launch svg { width: 26px; height: 26px; }
.ctd-launch:focus-visible, .ctd-w button:focus-visible, .ctd-history:focus-visible, .ctd-w input:focus-visible, .ctd-w select:focus-visible {
  outline: 3px solid var(--ctd-accent, #8a5a2e); outline-offset: 2px; }
.ctd-right { right: 16px; } .ctd-left { left: 16px; }
.ctd-launch.ctd-stack { bottom: 84px; }
.ctd-panel { position: fixed; bottom: 84px; width: min(420px, calc(100vw - 16px)); height: min(640px, calc(100vh - 100px));
  background: var(--ctd-card, #ffffff); color: var(--ctd-ink, #2b2118); border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 12px;
  box-shadow: 0 12px 40px rgba(0,0,0,.28); display: flex; flex-direction: column; overflow: hidden; z-index: 2147483001; }
.ctd-panel[hidden] { display: none; }
.ctd-panel.ctd-right { right: 8px; } .ctd-panel.ctd-left { left: 8px; }
@media (min-width: 480px) { .ctd-panel.ctd-right { right: 16px; } .ctd-panel.ctd-left { left: 16px; } }
.ctd-head { display: flex; align-items: center; gap: 8px; padding: 10px 12px; border-bottom: 1px solid var(--ctd-line, #d9c9b8); background: var(--ctd-soft, #f6f1ea); }
.ctd-head h2 { font-size: 15px; margin: 0; flex: 1; font-weight: 600; }
.ctd-who { font-size: 12px; color: var(--ctd-muted, #6b5a4b); }
.ctd-icon-btn { background: transparent; border: 0; color: inherit; cursor: pointer; padding: 4px; border-radius: 6px; display: inline-flex; }
.ctd-icon-btn svg { width: 18px; height: 18px; }
.ctd-icon-btn[hidden] { display: none; }
.ctd-note { margin: 0; padding: 8px 12px; font-size: 13px; border-bottom: 1px solid var(--ctd-line, #d9c9b8); }
.ctd-note[hidden] { display: none; }
.ctd-note.ctd-error { color: var(--ctd-err, #b3261e); }
.ctd-note code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.ctd-body { flex: 1; overflow: auto; padding: 12px; }
.ctd-body[hidden] { display: none; }
.ctd-login { display: grid; gap: 10px; padding: 12px; }
.ctd-login[hidden] { display: none; }
.ctd-login h3 { margin: 0; font-size: 15px; }
.ctd-login label { display: grid; gap: 4px; font-size: 13px; }
.ctd-login input, .ctd-login select { font: inherit; padding: 7px 9px; border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 6px;
  background: var(--ctd-card, #ffffff); color: var(--ctd-ink, #2b2118); width: 100%; }
.ctd-login .ctd-row { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.ctd-login button[type=submit] { font: inherit; padding: 8px 12px; border: 0; border-radius: 6px; cursor: pointer;
  background: var(--ctd-accent, #8a5a2e); color: var(--ctd-on-accent, #ffffff); font-weight: 600; }
.ctd-login button[disabled] { opacity: .6; cursor: progress; }
.ctd-tables { display: grid; gap: 6px; padding: 0 0 10px; }
.ctd-tables[hidden] { display: none; }
.ctd-tables input { font: inherit; padding: 6px 8px; border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 6px; background: var(--ctd-card, #ffffff); color: var(--ctd-ink, #2b2118); }
.ctd-tables ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px; max-height: 90px; overflow: auto; }
.ctd-tables li button { font: 12px ui-monospace, monospace; padding: 2px 6px; border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 10px; background: var(--ctd-soft, #f6f1ea); color: inherit; cursor: pointer; }
.ctd-tables li button[aria-pressed=true] { background: var(--ctd-accent, #8a5a2e); color: var(--ctd-on-accent, #ffffff); }
.ctd-history { border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 8px; padding: 8px 10px; margin: 0 0 10px; background: var(--ctd-soft, #f6f1ea); }
.ctd-history[hidden] { display: none; }
.ctd-history:focus { outline: none; }
.ctd-history h3 { margin: 6px 0 4px; font-size: 13px; font-weight: 600; }
.ctd-history p { margin: 2px 0; }
.ctd-history p[hidden] { display: none; }
.ctd-h-list { list-style: none; margin: 0; padding: 0; display: grid; gap: 2px; max-height: 180px; overflow: auto; }
.ctd-h-list li { display: flex; align-items: center; gap: 2px; }
.ctd-h-q { flex: 1; min-width: 0; text-align: left; font: inherit; font-size: 13px; padding: 4px 6px; border: 0; border-radius: 6px; background: transparent;
  color: inherit; cursor: pointer; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.ctd-h-q:hover { background: var(--ctd-card, #ffffff); }
.ctd-h-star[aria-pressed=true] svg { fill: currentColor; color: var(--ctd-accent, #8a5a2e); }
.ctd-h-list .ctd-icon-btn svg { width: 16px; height: 16px; }
.ctd-sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;


/**
 * A shadow root of its own for the answer view (mountAsk) inside `container`, with the view's
 * stylesheet adopted (the view's own <style> may be refused by a strict host CSP).
 */
export function answerRoot(container, css) {
  const host = document.createElement('div');
  container.append(host);
  const root = host.attachShadow({ mode: 'open' });
  if (css) adoptStyles(root, css);
  return root;
}

let count = 0;

/**
 * Mount the frame. opts: { kind: 'assistant'|'agent', title, position: 'right'|'left',
 * open: boolean, stack: boolean (a second launcher above the first), theme: 'auto'|'light'|'dark' }.
 */
export function createShell(opts) {
  const id = `ctd-${opts.kind}-${++count}`;
  const host = document.createElement('div');
  host.setAttribute('data-cortado-widget', opts.kind);
  for (const [k, v] of [['all', 'initial'], ['position', 'static'], ['display', 'contents']]) host.style.setProperty(k, v, 'important');
  const root = host.attachShadow({ mode: 'open' });
  adoptStyles(root, WIDGET_CSS);
  if (opts.css) adoptStyles(root, opts.css);

  const side = opts.position === 'left' ? 'ctd-left' : 'ctd-right';
  const wrap = el('div', { class: 'ctd-w', 'data-theme': opts.theme === 'light' || opts.theme === 'dark' ? opts.theme : 'auto' });
  const launch = el('button', {
    type: 'button', class: `ctd-launch ${side}${opts.stack ? ' ctd-stack' : ''}`, 'aria-haspopup': 'dialog',
    'aria-expanded': 'false', 'aria-controls': id, 'aria-label': `Open ${opts.title}`, title: opts.title,
  }, icon(opts.kind === 'agent' ? 'database' : 'chat'));
  const heading = el('h2', { id: `${id}-title`, text: opts.title });
  const who = el('span', { class: 'ctd-who', hidden: true });
  const logout = el('button', { type: 'button', class: 'ctd-icon-btn', 'aria-label': 'Sign out', title: 'Sign out', hidden: true }, icon('logout'));
  const fresh = el('button', { type: 'button', class: 'ctd-icon-btn', 'aria-label': 'New conversation', title: 'New conversation', hidden: true }, icon('plus'));
  const hist = el('button', { type: 'button', class: 'ctd-icon-btn ctd-hist', 'aria-label': 'History and favourites', title: 'History and favourites', 'aria-expanded': 'false', hidden: true }, icon('history'));
  const close = el('button', { type: 'button', class: 'ctd-icon-btn', 'aria-label': `Close ${opts.title}`, title: 'Close' }, icon('x'));
  const note = el('p', { class: 'ctd-note', role: 'status', 'aria-live': 'polite', hidden: true });
  const login = el('form', { class: 'ctd-login', hidden: true, novalidate: true });
  const body = el('div', { class: 'ctd-body', hidden: true });
  const panel = el('section', { id, class: `ctd-panel ${side}`, role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': `${id}-title`, hidden: true },
    el('div', { class: 'ctd-head' }, heading, who, hist, fresh, logout, close), note, login, body);
  wrap.append(launch, panel);
  root.append(wrap);
  document.body.appendChild(host);

  const listeners = [];
  let freshOn = false;
  let histOn = false;
  const shell = {
    host, root, panel, login, body, launch, historyButton: hist,
    get isOpen() { return !panel.hidden; },
    open() {
      panel.hidden = false;
      launch.setAttribute('aria-expanded', 'true');
      launch.setAttribute('aria-label', `Close ${opts.title}`);
      for (const fn of listeners) fn();
      const first = panel.querySelector('input:not([type=hidden]), textarea, select, button.ctd-first');
      (first ?? close).focus();
    },
    close() {
      panel.hidden = true;
      launch.setAttribute('aria-expanded', 'false');
      launch.setAttribute('aria-label', `Open ${opts.title}`);
      launch.focus();
    },
    onOpen(fn) { listeners.push(fn); },
    /** a line above the body: kind 'error' | 'info'; code and request id shown when given */
    say(text, kind = 'info', extra = {}) {
      note.replaceChildren();
      if (!text) { note.hidden = true; return; }
      note.className = `ctd-note${kind === 'error' ? ' ctd-error' : ''}`;
      note.setAttribute('role', kind === 'error' ? 'alert' : 'status');
      if (extra.code) note.append(el('code', { text: extra.code }), ' ');
      note.append(text);
      if (extra.requestId) note.append(' ', el('span', { class: 'ctd-who', text: `(request id ${extra.requestId})` }));
      note.hidden = false;
    },
    /** who is signed in (empty: nobody), and whether Sign out is offered */
    signedIn(name, canLogout) {
      who.textContent = name ?? '';
      who.hidden = !name;
      logout.hidden = !canLogout;
    },
    onLogout(fn) { logout.addEventListener('click', fn); },
    onNewConversation(fn) { freshOn = true; fresh.hidden = body.hidden; fresh.addEventListener('click', fn); },
    /** the History button of the header (shown with the body): fn on a click; it controls region `controls` */
    onHistory(fn, controls) { histOn = true; hist.hidden = body.hidden; hist.setAttribute('aria-controls', controls); hist.addEventListener('click', fn); },
    showLogin() { body.hidden = true; login.hidden = false; fresh.hidden = true; hist.hidden = true; },
    showBody() { login.hidden = true; body.hidden = false; fresh.hidden = !freshOn; hist.hidden = !histOn; },
  };
  launch.addEventListener('click', () => (shell.isOpen ? shell.close() : shell.open()));
  close.addEventListener('click', () => shell.close());
  panel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.stopPropagation(); shell.close(); }
  });
  return shell;
}
