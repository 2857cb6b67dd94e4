// The pages' DOM helpers, the one copy every page and widget imports: elements are built from
// text and attributes only (never from HTML strings), icons are inline SVG paths of our own.
import { errorWords } from './errors.js';

/** The first element matching `sel` in `root`. */
export const $ = (sel, root = document) => root.querySelector(sel);

/**
 * el('div', {class: 'x', text: 'y', 'aria-label': 'z', onclick: fn}, ...children)
 * An attribute that is undefined, null or false is left out; true is an empty attribute;
 * `text` sets the text, `hidden` hides, an `on…` function listens. Children that are null,
 * undefined or false are skipped; strings become text.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'hidden') node.hidden = true;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';

/** Inline SVG icons (24×24, stroked in currentColor): no emoji, no icon font, no request. */
const ICONS = {
  copy: ['M9 9h10v10H9z', 'M5 15V5h10'],
  check: ['M5 12l5 5 9-10'],
  up: ['M7 11v9H4v-9z', 'M7 11l4-8c2 0 3 1 3 3v3h5c1 0 2 1 2 2l-2 7c0 1-1 2-2 2H7'],
  down: ['M7 13V4H4v9z', 'M7 13l4 8c2 0 3-1 3-3v-3h5c1 0 2-1 2-2l-2-7c0-1-1-2-2-2H7'],
  star: ['M12 3l2.8 5.7 6.2.9-4.5 4.4 1 6.2-5.5-2.9-5.5 2.9 1-6.2L3 9.6l6.2-.9z'],
  download: ['M12 4v11', 'M7 10l5 5 5-5', 'M5 20h14'],
  info: ['M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z', 'M12 11v6', 'M12 7.5v.5'],
  warning: ['M12 3l10 18H2z', 'M12 10v5', 'M12 17.5v.5'],
  alert: ['M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z', 'M12 7v6', 'M12 16.5v.5'],
  trend: ['M3 17l6-6 4 4 8-8', 'M15 7h6v6'],
  chart: ['M4 20V10', 'M10 20V4', 'M16 20v-7', 'M22 20H2'],
  outlier: ['M4 18h16', 'M6 14v4', 'M10 12v6', 'M14 13v5', 'M18 4v14'],
  sum: ['M18 5H6l6 7-6 7h12'],
  link: ['M10 14a4 4 0 0 0 6 0l3-3a4 4 0 0 0-6-6l-1 1', 'M14 10a4 4 0 0 0-6 0l-3 3a4 4 0 0 0 6 6l1-1'],
  sparkle: ['M12 3v6', 'M12 15v6', 'M3 12h6', 'M15 12h6'],
  sort: ['M8 5v14', 'M4 15l4 4 4-4', 'M16 19V5', 'M12 9l4-4 4 4'],
  play: ['M7 4l13 8-13 8z'],
  x: ['M6 6l12 12', 'M18 6L6 18'],
  plus: ['M12 5v14', 'M5 12h14'],
  trash: ['M4 7h16', 'M9 7V4h6v3', 'M6 7l1 13h10l1-13'],
  refresh: ['M20 12a8 8 0 1 1-2.3-5.7', 'M20 4v5h-5'],
  external: ['M14 4h6v6', 'M20 4l-9 9', 'M18 14v6H4V6h6'],
  chat: ['M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z', 'M8.5 11h.01M12 11h.01M15.5 11h.01'],
  database: ['M4 5a8 3 0 1 0 16 0a8 3 0 1 0-16 0', 'M4 5v6c0 1.7 3.6 3 8 3s8-1.3 8-3V5', 'M4 11v6c0 1.7 3.6 3 8 3s8-1.3 8-3v-6'],
  logout: ['M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4', 'M16 17l5-5-5-5M21 12H9'],
  history: ['M3 12a9 9 0 1 0 3-6.7L3 8', 'M3 3v5h5', 'M12 7v5l3 3'],
  bell: ['M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9', 'M10.3 21a1.94 1.94 0 0 0 3.4 0'],
  edit: ['M4 20h4L19 9l-4-4L4 16z', 'M14 6l4 4'],
  clock: ['M12 7v5l3 2', 'M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18'],
  pin: ['M12 16v5', 'M9 3h6l-1 6 4 4v3H6v-3l4-4z'],
  left: ['M15 6l-6 6 6 6'],
  right: ['M9 6l6 6-6 6'],
  widen: ['M3 12h18', 'M7 8l-4 4 4 4', 'M17 8l4 4-4 4'],
  calendar: ['M4 6h16v14H4z', 'M4 10h16', 'M8 3v4', 'M16 3v4'],
};

/** An icon by name; with a `label` it is an image of that name, without it is hidden from assistive technology. */
export function icon(name, label) {
  const svg = document.createElementNS(SVG, 'svg');
  const attrs = { viewBox: '0 0 24 24', width: '16', height: '16', fill: 'none', stroke: 'currentColor', 'stroke-width': '2', 'stroke-linecap': 'round', 'stroke-linejoin': 'round', class: `ctd-icon ctd-icon-${name}` };
  Object.assign(attrs, label ? { role: 'img', 'aria-label': label } : { 'aria-hidden': 'true', focusable: 'false' });
  for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, v);
  for (const d of ICONS[name] ?? ICONS.info) {
    const p = document.createElementNS(SVG, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

/** A random id that works outside secure contexts too (a widget on an http page). */
export function randomId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

/** Copy `text` to the clipboard; the button's last child says whether it worked, then its label again. */
export async function copyInto(button, text, label = button.lastChild?.textContent ?? 'Copy') {
  try {
    await navigator.clipboard.writeText(text);
    button.lastChild.textContent = 'Copied';
  } catch {
    button.lastChild.textContent = 'Select and copy';
  }
  setTimeout(() => { button.lastChild.textContent = label; }, 2000);
}

/**
 * Give a shadow root its own stylesheet: a constructed one (which a strict style-src does not
 * block), or a <style> element where those are unsupported.
 */
export function adoptStyles(root, css) {
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  } catch {
    root.append(el('style', { text: css }));
  }
}

/**
 * An error shown in place (an ApiError or an error body): first what happened and what to try,
 * in words for people (lib/errors.js); then, behind "Details", the code, the server's message,
 * the request id to quote and the SQL that failed (`opts.sql`), for whoever helps them.
 */
export function errorBox(e, opts = {}) {
  const rid = e?.requestId ?? e?.request_id;
  const { title, hint } = errorWords(e);
  return el('div', { class: 'error', role: 'alert' },
    el('p', { class: 'error-title', text: title }),
    el('p', { class: 'error-hint', text: hint }),
    el('details', { class: 'error-details' },
      el('summary', { text: 'Details' }),
      el('p', {}, el('code', { text: e?.code ?? 'ERROR' }), ` ${e?.message ?? 'something went wrong'}`),
      rid ? el('div', { class: 'muted rid', text: `request id ${rid}` }) : null,
      opts.sql ? el('pre', { class: 'error-sql', text: opts.sql }) : null));
}
