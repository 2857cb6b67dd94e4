import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ERRORS, McpMapping, isErrorCode } from '../../protocol/errors.js';
import { EVENTS, FORMER_NAMES, FORMER_SETTINGS_NAMES_REMOVED_IN, REQUESTS, progressSubject } from '../../protocol/subjects.js';
import { ROOT } from '../../config/load.js';

t.test('every error code has one HTTP status, one MCP mapping and a line in the error table of docs/http-api.md', async (t) => {
  const doc = readFileSync(path.join(ROOT, 'docs/http-api.md'), 'utf8');
  const mcp = new Set(Object.values(McpMapping));
  for (const [code, spec] of Object.entries(ERRORS)) {
    t.ok(isErrorCode(code));
    t.match(code, /^[A-Z][A-Z_]+$/);
    t.ok(spec.http >= 400 && spec.http < 600, `${code} has an HTTP error status`);
    t.ok(mcp.has(spec.mcp), `${code} maps to MCP`);
    const retryable = spec.retryable ? 'yes' : 'no';
    t.match(doc, new RegExp(`^\\|\\s*\`${code}\`\\s*\\|\\s*${spec.http}\\s*\\|\\s*${retryable}\\s*\\|`, 'm'), `docs/http-api.md documents ${code} with ${spec.http}, retryable ${retryable}`);
  }
  const documented = [...doc.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*\d{3}\s*\|/gm)].map((m) => m[1]);
  t.ok(documented.length >= Object.keys(ERRORS).length, 'the error table is there');
  for (const code of documented) t.ok(isErrorCode(code), `docs/http-api.md's ${code} exists in protocol/errors.ts`);
  t.notMatch(readFileSync(path.join(ROOT, 'README.md'), 'utf8'), /^\|\s*`[A-Z_]+`\s*\|\s*\d{3}\s*\|/m, 'README keeps no second error table to drift');
});

t.test('subjects are unique, well-formed and owned', async (t) => {
  const subjects = [...REQUESTS.map((r) => r.subject), ...EVENTS.map((e) => e.subject)];
  t.equal(new Set(subjects).size, subjects.length, 'no subject is defined twice');
  for (const r of REQUESTS) {
    t.notOk(r.subject.startsWith('evt.'));
    t.ok(r.owner.length > 0);
    t.ok(r.timeoutMs > 0);
  }
  for (const e of EVENTS) t.ok(e.subject.startsWith('evt.'));
  t.equal(progressSubject('3F2A-xyz'), 'progress.3f2a-xyz');
  t.equal(progressSubject('a.b*c>'), 'progress.a_b_c_');
});

/** Source files outside protocol/ that are ours. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (full.endsWith('.ts')) out.push(full);
  }
  return out;
}

t.test('no subject string or header name outside protocol/', async (t) => {
  const files = ['actors', 'store', 'edge', 'cli', 'config', 'bench'].flatMap((d) => {
    try { return sources(path.join(ROOT, d)); } catch { return []; }
  });
  t.ok(files.length > 10);
  const stray = /['"`](?:cortado\.[a-z]|evt\.[a-z]|progress\.|_INBOX|cortado-request-id|cortado-user|cortado-deadline|Nats-Msg-Id)/;
  for (const f of files) {
    const lines = readFileSync(f, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (stray.test(line)) t.fail(`${path.relative(ROOT, f)}:${i + 1} names a subject or header: ${line.trim()}`);
    });
  }
});

// ---- the published contracts (GET /openapi.json, GET /asyncapi.json, docs/*.json) ----------

type Doc = Record<string, any>;

/** Every `$ref` of a document that does not resolve to something inside it. */
function brokenRefs(doc: Doc): string[] {
  const broken: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}/${i}`));
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') {
        const target = typeof v === 'string' && v.startsWith('#/')
          ? v.slice(2).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')).reduce<any>((o, key) => (o == null ? undefined : o[key]), doc)
          : undefined;
        if (target === undefined) broken.push(`${at}: ${String(v)}`);
      } else walk(v, `${at}/${k}`);
    }
  };
  walk(doc, '#');
  return broken;
}

/** What OpenAPI 3.1 requires of a document, and what ours promises: the problems found. */
function openApiProblems(doc: Doc): string[] {
  const out: string[] = [];
  if (!/^3\.1\.\d+$/.test(String(doc.openapi))) out.push('openapi is not 3.1.x');
  if (typeof doc.info?.title !== 'string' || typeof doc.info?.version !== 'string') out.push('info.title and info.version are required');
  if (!doc.paths || typeof doc.paths !== 'object') out.push('paths is required');
  const ids = new Set<string>();
  for (const [p, item] of Object.entries<Doc>(doc.paths ?? {})) {
    if (!p.startsWith('/')) out.push(`${p}: a path starts with /`);
    const templated = [...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (!['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(method)) out.push(`${p}: ${method} is no HTTP method`);
      if (!op.responses || Object.keys(op.responses).length === 0) out.push(`${method} ${p}: responses are required`);
      if (ids.has(op.operationId)) out.push(`${method} ${p}: operationId ${op.operationId} is used twice`);
      ids.add(op.operationId);
      const declared = (op.parameters ?? []).filter((x: Doc) => x.in === 'path');
      for (const name of templated) {
        const param = declared.find((x: Doc) => x.name === name);
        if (!param || param.required !== true) out.push(`${method} ${p}: path parameter ${name} is not declared as required`);
      }
      if (declared.length !== templated.length) out.push(`${method} ${p}: declares path parameters the path does not have`);
      for (const s of op.security ?? []) for (const scheme of Object.keys(s)) if (!doc.components?.securitySchemes?.[scheme]) out.push(`${method} ${p}: no security scheme ${scheme}`);
    }
  }
  return [...out, ...brokenRefs(doc).map((r) => `$ref does not resolve: ${r}`)];
}

/** What AsyncAPI 3 requires of a document, and what ours promises: the problems found. */
function asyncApiProblems(doc: Doc): string[] {
  const out: string[] = [];
  if (doc.asyncapi !== '3.0.0') out.push('asyncapi is not 3.0.0');
  if (typeof doc.info?.title !== 'string' || typeof doc.info?.version !== 'string') out.push('info.title and info.version are required');
  for (const [id, op] of Object.entries<Doc>(doc.operations ?? {})) {
    if (op.action !== 'send' && op.action !== 'receive') out.push(`operation ${id}: action is send or receive`);
    if (typeof op.channel?.$ref !== 'string') out.push(`operation ${id}: channel is a $ref`);
  }
  for (const key of Object.keys(doc.components?.schemas ?? {})) if (!/^[a-zA-Z0-9.\-_]+$/.test(key)) out.push(`component key ${key}`);
  return [...out, ...brokenRefs(doc).map((r) => `$ref does not resolve: ${r}`)];
}

t.test('the checks of the documents find what they look for', async (t) => {
  t.same(brokenRefs({ a: { $ref: '#/b/c' }, b: { c: 1 } }), []);
  t.same(brokenRefs({ a: { $ref: '#/b/x' }, b: { c: 1 } }), ['#/a: #/b/x']);
  t.match(openApiProblems({ openapi: '3.0.3', info: {}, paths: { '/a/{id}': { get: { operationId: 'x', parameters: [] } } } }).join('\n'),
    /3\.1[\s\S]*info[\s\S]*responses[\s\S]*path parameter id/);
  t.match(asyncApiProblems({ asyncapi: '2.6.0', info: { title: 'x', version: '1' }, operations: { a: { action: 'publish', channel: { $ref: '#/channels/none' } } } }).join('\n'),
    /3\.0\.0[\s\S]*send or receive[\s\S]*#\/channels\/none/);
});

t.test('the published contracts: every route and subject, valid, and docs/*.json as the code makes them', async (t) => {
  const { generateContracts, CONTRACT_FILES } = await import('../../scripts/contracts.js');
  const made = await generateContracts();
  const openapi = JSON.parse(made.openapi) as Doc;
  const asyncapi = JSON.parse(made.asyncapi) as Doc;

  t.same(openApiProblems(openapi), [], 'a valid OpenAPI 3.1 document');
  t.same(asyncApiProblems(asyncapi), [], 'a valid AsyncAPI 3 document');

  // every registered route, with its method
  t.ok(made.routes.length > 50);
  for (const r of made.routes) {
    const p = r.pattern.split('/').map((s) => (s === '*' ? '{path}' : s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/');
    t.ok(openapi.paths[p]?.[r.method.toLowerCase()], `${r.method} ${r.pattern} is in /openapi.json`);
  }
  const operations = Object.values<Doc>(openapi.paths).reduce((n, item) => n + Object.keys(item).length, 0);
  t.equal(operations, made.routes.length, 'no operation the edge does not serve');

  // a declared body is the TypeBox schema the route reads with, a declared reply the one it answers with
  const { ApiQueryBody } = await import('../../protocol/schemas/http.js');
  const { AskReply } = await import('../../protocol/schemas/ask.js');
  const op = openapi.paths['/api/query'].post;
  t.equal(op.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ApiQueryBody');
  t.same(openapi.components.schemas.ApiQueryBody, JSON.parse(JSON.stringify(ApiQueryBody)));
  t.same(openapi.components.schemas.AskReply, JSON.parse(JSON.stringify(AskReply)));
  t.same(op.security?.[0], {}, '/api/query takes anyone (the empty requirement first)');
  t.ok(op.security.some((s: Record<string, string[]>) => 'bearerToken' in s), 'or a token, which plugins.auth.require_login asks for');
  t.same(openapi.paths['/admin/config/{key}'].put.security, [{ adminCookie: [], csrfHeader: [] }], 'a cookie write needs the CSRF header');
  t.ok(openapi.components.schemas.ErrorReply.properties.error.properties.code.enum.includes('SQL_REJECTED'));

  // every subject, under the prefix, with its schemas and the durable flag
  const addresses = new Map(Object.values<Doc>(asyncapi.channels).map((c) => [c.address, c]));
  for (const r of REQUESTS) t.ok(addresses.has(`cortado.${r.subject}`), `request ${r.subject} is in /asyncapi.json`);
  for (const e of EVENTS) {
    t.ok(addresses.has(`cortado.${e.subject}`), `event ${e.subject} is in /asyncapi.json`);
    t.equal(asyncapi.components.messages[e.subject]?.['x-cortado-durable'], e.durable, `${e.subject} says whether it is durable`);
  }
  for (const [current, former] of FORMER_NAMES) {
    t.same(asyncapi.operations[former.subject]?.['x-cortado-deprecated'], { replaced_by: current.subject, removed_in: FORMER_SETTINGS_NAMES_REMOVED_IN }, `${former.subject} is in /asyncapi.json, deprecated for ${current.subject}`);
  }
  t.equal(Object.keys(asyncapi.operations).length, REQUESTS.length + FORMER_NAMES.size + EVENTS.length + 1, 'one operation per subject (and per former name still served), and progress');

  for (const [key, file] of Object.entries(CONTRACT_FILES) as Array<['openapi' | 'asyncapi', string]>) {
    let current = '';
    try { current = readFileSync(path.join(ROOT, file), 'utf8'); } catch { /* missing */ }
    // one line, not a 500 KB diff: what to run says enough
    t.ok(current === made[key], `${file} is what the code makes${current === made[key] ? '' : ': it drifted (a route, subject or schema changed); run `npm run contracts` and commit the result'}`);
  }
});
