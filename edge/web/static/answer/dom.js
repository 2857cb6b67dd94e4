// Small DOM helpers shared by the answer modules: elements are built with textContent only (no HTML strings).

/** el('div', {class: 'x', text: 'y', 'aria-label': 'z'}, ...children) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'hidden') node.hidden = true;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';

/** Inline SVG icons (24×24, stroked): no emoji, no icon font, no request. */
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
};

export function icon(name, label) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('fill', 'none');
  svg.setAttribute('stroke', 'currentColor');
  svg.setAttribute('stroke-width', '2');
  svg.setAttribute('stroke-linecap', 'round');
  svg.setAttribute('stroke-linejoin', 'round');
  svg.setAttribute('class', `ctd-icon ctd-icon-${name}`);
  if (label) {
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
  } else {
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('focusable', 'false');
  }
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
