// The first page: the answer view (./answer/index.js) mounted on the home tab, the service's
// health, the table picker, and the tabs of the dashboard.
import { mountAsk } from './answer/index.js';

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}

async function health() {
  const pill = $('#health');
  try {
    const r = await fetch('/health');
    const h = await r.json();
    pill.textContent = h.status === 'ok' ? `ready · v${h.version}` : `database: ${h.database} · LLM: ${h.llm.replace('_', ' ')}`;
    pill.className = `pill ${h.status === 'ok' ? 'ok' : 'degraded'}`;
    pill.title = JSON.stringify(h.details ?? {}, null, 1);
  } catch {
    pill.textContent = 'unreachable';
    pill.className = 'pill down';
  }
}

async function loadTables() {
  const box = $('#tables');
  try {
    const r = await fetch('/api/tables');
    const body = await r.json();
    if (!r.ok) throw new Error(body.error?.message ?? r.statusText);
    box.replaceChildren(...body.tables.map((t) => el('label', { title: t.comment ?? '' }, el('input', { type: 'checkbox', value: t.name }), t.name)));
    $('#tables-count').textContent = `(${body.tables.length}; none ticked = let Cortado choose)`;
  } catch (e) {
    box.replaceChildren(el('span', { class: 'muted', text: `cannot list tables: ${e.message}` }));
  }
}

function selectedTables() {
  return [...document.querySelectorAll('#tables input:checked')].map((i) => i.value);
}

// The page's own question form becomes the answer view (the table picker stays above it, the example
// questions move into it); `#assistant-root` is used as it is when the page has one.
function mountHome() {
  let root = $('#assistant-root');
  const examples = [...document.querySelectorAll('#examples .chip')].map((c) => c.textContent);
  if (!root) {
    const form = $('#ask');
    root = el('div', { id: 'assistant-root' });
    const picker = $('#tables-box');
    if (form) form.replaceWith(root);
    $('#answers')?.remove();
    if (picker) root.before(el('div', { class: 'tables-picker' }, picker));
  }
  const panel = mountAsk(root, { endpoint: '/api/query', widget: 'dashboard', tables: selectedTables, examples });
  // the ids this page has always had (bookmarklets, tests)
  const textarea = root.querySelector('textarea.question');
  const label = root.querySelector(`label[for="${textarea.id}"]`);
  textarea.id = 'question';
  if (label) label.htmlFor = 'question';
  root.querySelector('button.go').id = 'go';
  return panel;
}

mountHome();
void health();
void loadTables();

// The tabs of the dashboard: the home tab (this page) always; the others as ui.sections says
// (GET /ui/config; a key left out is on). A tab's script is loaded when it is first opened.
const VIEWS = { schedules: () => import('./schedules.js') };
const mounted = new Map();

async function showView(name) {
  for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
    b.classList.toggle('active', b.dataset.view === name);
    b.setAttribute('aria-pressed', String(b.dataset.view === name));
  }
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== `view-${name}`;
  if (!VIEWS[name]) return;
  if (!mounted.has(name)) mounted.set(name, VIEWS[name]().then((m) => m.mount($(`#view-${name}`), uiConfig)));
  const view = await mounted.get(name);
  await view.refresh();
}

let uiConfig = { sections: {}, sign_in: {} };
async function loadUiConfig() {
  try {
    const r = await fetch('/ui/config');
    if (r.ok) uiConfig = await r.json();
  } catch {
    // the home tab works without it
  }
  for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
    if (b.dataset.view !== 'home') b.hidden = uiConfig.sections?.[b.dataset.view] === false;
  }
  document.body.dataset.ui = 'ready';
  const wanted = location.hash.slice(1);
  if (VIEWS[wanted] && uiConfig.sections?.[wanted] !== false) await showView(wanted);
}
for (const b of document.querySelectorAll('#main-tabs [data-view]')) {
  b.addEventListener('click', () => {
    history.replaceState(null, '', b.dataset.view === 'home' ? location.pathname : `#${b.dataset.view}`);
    void showView(b.dataset.view).catch((e) => console.error(e));
  });
}
void loadUiConfig();
