// The API docs page: reads /openapi.json from this origin and draws every operation, grouped by
// tag, with its parameters, body and reply schemas ($refs resolved to the components). DOM only
// (textContent: nothing from the document is parsed as HTML), no library, no other origin.
import { createApi } from './lib/api.js';
import { el } from './lib/dom.js';

const byId = (id) => document.getElementById(id);

function resolve(doc, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return undefined;
  return ref.slice(2).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((o, k) => (o == null ? o : o[k]), doc);
}

/** A schema with its $refs replaced by what they point to (a ref met again inside itself stays a ref). */
function expand(doc, schema, seen) {
  if (Array.isArray(schema)) return schema.map((s) => expand(doc, s, seen));
  if (!schema || typeof schema !== 'object') return schema;
  if (typeof schema.$ref === 'string') {
    if (seen.has(schema.$ref)) return schema;
    const target = resolve(doc, schema.$ref);
    return target === undefined ? schema : expand(doc, target, new Set([...seen, schema.$ref]));
  }
  const out = {};
  for (const [k, v] of Object.entries(schema)) out[k] = expand(doc, v, seen);
  return out;
}

function schemaBlock(doc, label, schema) {
  const name = schema && typeof schema.$ref === 'string' ? ` (${schema.$ref.split('/').pop()})` : '';
  return el('div', {}, el('h4', {}, label + name), el('pre', {}, JSON.stringify(expand(doc, schema, new Set()), null, 2)));
}

function paramsTable(doc, params) {
  const rows = params.map((p) => (p.$ref ? resolve(doc, p.$ref) : p)).filter(Boolean);
  if (!rows.length) return undefined;
  return el('table', {},
    el('tr', {}, el('th', {}, 'name'), el('th', {}, 'in'), el('th', {}, 'required'), el('th', {}, 'schema / description')),
    ...rows.map((p) => el('tr', {},
      el('td', {}, String(p.name)), el('td', {}, String(p.in)), el('td', {}, p.required ? 'yes' : 'no'),
      el('td', {}, [JSON.stringify(p.schema || {}), p.description || ''].filter(Boolean).join(' — ')))));
}

function operation(doc, path, method, op) {
  const auth = op['x-cortado-auth'] || '';
  const body = el('div', { class: 'body' });
  const params = paramsTable(doc, op.parameters || []);
  if (params) body.append(el('h4', {}, 'Parameters'), params);
  const reqSchema = op.requestBody && op.requestBody.content && op.requestBody.content['application/json'];
  if (reqSchema) body.append(schemaBlock(doc, 'Request body (application/json)', reqSchema.schema));
  for (const [status, response] of Object.entries(op.responses || {})) {
    const r = response.$ref ? resolve(doc, response.$ref) : response;
    if (!r) continue;
    body.append(el('h4', {}, `${status}: ${r.description || ''}`));
    for (const [type, media] of Object.entries(r.content || {})) body.append(schemaBlock(doc, type, media.schema || {}));
  }
  const item = el('details', { class: 'op', 'data-search': `${method} ${path} ${op.summary || ''} ${(op.tags || []).join(' ')}`.toLowerCase() },
    el('summary', {}, el('span', { class: `method ${method}` }, method.toUpperCase()), el('span', { class: 'path' }, path), el('span', {}, op.summary || ''), el('span', { class: 'auth' }, auth === 'none' ? 'open' : `auth: ${auth}`)),
    body);
  return item;
}

function render(doc) {
  byId('title').textContent = `${doc.info.title} ${doc.info.version}`;
  document.title = doc.info.title;
  byId('about').textContent = doc.info.description || '';
  const groups = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'other';
      if (!groups.has(tag)) groups.set(tag, []);
      groups.get(tag).push(operation(doc, path, method, op));
    }
  }
  const main = byId('operations');
  main.replaceChildren();
  for (const [tag, ops] of groups) main.append(el('section', { 'data-tag': tag }, el('h2', {}, tag), ...ops));
  main.setAttribute('data-operations', String([...groups.values()].reduce((n, ops) => n + ops.length, 0)));
}

function filter() {
  const q = byId('filter').value.trim().toLowerCase();
  for (const op of document.querySelectorAll('details.op')) op.hidden = q !== '' && !op.getAttribute('data-search').includes(q);
  for (const section of document.querySelectorAll('section[data-tag]')) section.hidden = ![...section.querySelectorAll('details.op')].some((d) => !d.hidden);
}

document.addEventListener('DOMContentLoaded', () => {
  byId('filter').addEventListener('input', filter);
  createApi().get('/openapi.json')
    .then(render)
    .catch((err) => { byId('operations').replaceChildren(el('p', { class: 'error' }, `The API description could not be loaded: ${err.message}`)); });
});
