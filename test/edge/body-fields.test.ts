/**
 * Declared fields only (mass assignment, issue 25 item 10): a body field the route's schema
 * does not declare never reaches the route. Every route with a JSON body, as the OpenAPI
 * document lists them, refuses one with 400 naming it — or, on the SQLatte-compatible routes
 * and the alarm routes, drops it — on both HTTP servers; `token` in POST /auth/tokens cannot
 * pick the session a token is minted for; nested fields count (`/tiles/0/extra`); the rules of
 * edge/http/fields.ts on schemas of every shape (objects, records, arrays, unions, allOf).
 */
import t from 'tap';
import Type from 'typebox';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { stripUndeclared, undeclaredFields } from '../../edge/http/fields.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

t.test('the rules: what a schema declares, at any depth', async (t) => {
  const Tile = Type.Object({ title: Type.String(), sql: Type.Optional(Type.String()) });
  const Body = Type.Object({
    name: Type.String(),
    tiles: Type.Optional(Type.Array(Tile)),
    labels: Type.Optional(Type.Record(Type.String(), Type.Number())),
    open: Type.Optional(Type.Object({}, { additionalProperties: true })),
    free: Type.Optional(Type.Unknown()),
    choice: Type.Optional(Type.Union([
      Type.Object({ kind: Type.Literal('a'), x: Type.Number() }),
      Type.Object({ kind: Type.Literal('a'), x: Type.Number(), y: Type.Number() }),
      Type.String(),
    ])),
  });
  t.same(undeclaredFields(Body, { name: 'n' }), []);
  t.same(undeclaredFields(Body, { name: 'n', token: 'x' }), ['/token'], 'a top-level field');
  t.same(undeclaredFields(Body, { name: 'n', tiles: [{ title: 'a' }, { title: 'b', owner: 'x' }] }), ['/tiles/1/owner'], 'in an array item');
  t.same(undeclaredFields(Body, { name: 'n', labels: { any: 1, key: 2 } }), [], 'a record declares every key');
  t.same(undeclaredFields(Body, { name: 'n', open: { a: { b: 1 } }, free: { c: 2 } }), [], 'open objects and unknown values');
  t.same(undeclaredFields(Body, { name: 'n', choice: { kind: 'a', x: 1, y: 2 } }), [], 'the union member that declares y');
  t.same(undeclaredFields(Body, { name: 'n', choice: { kind: 'a', x: 1, z: 2 } }), ['/choice/z'], 'no member declares z');
  t.same(undeclaredFields(Body, { name: 'n', 'a/b': 1, 'c~d': 2 }), ['/a~1b', '/c~0d'], 'JSON pointers');
  const both = Type.Intersect([Type.Object({ a: Type.Number() }), Type.Object({ b: Type.Number() })]);
  t.same(undeclaredFields(both, { a: 1, b: 2, c: 3 }), ['/c'], 'allOf: either member declares');
  const v = { name: 'n', by: 'mallory', tiles: [{ title: 'a', id: 7 }] };
  t.same(stripUndeclared(Body, v), ['/by', '/tiles/0/id']);
  t.same(v, { name: 'n', tiles: [{ title: 'a' }] }, 'strip drops them in place');
});

// ---- over HTTP: every route with a body ------------------------------------------------------

const tag = `${process.pid}_${Date.now().toString(36)}`;
const roleA = `fields_a_${tag}`;
const roleB = `fields_b_${tag}`;
const PASSWORD = 'fields-pw-1';
const nats = await startNats();
const db = await createTestDb('fields');
await db.pool.query(`
  CREATE TABLE items (id int PRIMARY KEY, name text);
  INSERT INTO items VALUES (1, 'one');
  CREATE ROLE ${roleA} LOGIN PASSWORD '${PASSWORD}';
  CREATE ROLE ${roleB} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${roleA}, ${roleB};
  GRANT USAGE ON SCHEMA public TO ${roleA}, ${roleB};
  GRANT SELECT ON items TO ${roleA}, ${roleB};
`);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM items') }));
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
const stacks: Array<{ kind: string; stack: Stack }> = [];
for (const [i, kind] of kinds.entries()) {
  const config = testConfig({
    natsUrl: nats.url,
    db: dbRef,
    llmUrl: fake.url,
    extra: {
      app: { http_server: kind },
      admin: { enabled: true, username: 'admin', password: 'fields-admin-pw' },
      config_db: { encryption_key: generateFernetKey() },
      plugins: { auth: { enabled: true, allowed_db_types: ['postgresql'] } },
      alarms: { enabled: true },
    },
  });
  // the first stack runs every actor; the second is a second edge on the same bus
  stacks.push({ kind, stack: await startStack(config, i === 0 ? undefined : { edge: true, actors: [] }) });
}
t.teardown(async () => {
  for (const { stack } of [...stacks].reverse()) await stack.stop();
  await fake.close();
  await db.drop();
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  for (const r of [roleA, roleB]) await admin.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
  await admin.end();
  await nats.stop();
});

/** Routes whose widgets send more than Cortado reads (SQLatte), and writes that take a record as GET gave it (alarms, schedules, the semantic layer). */
const SQLATTE = new Set(['POST /query', 'POST /query/confirm-execute', 'POST /auth/login', 'POST /auth/query', 'POST /auth/query/confirm']);
const stripped = (route: string): boolean => SQLATTE.has(route) || (/ \/api\/(alarms|schedules|semantic)\//.test(`${route}/`) && !route.endsWith('/cron-preview'));
/** Path parameters each route takes (its own checks come before the body's). */
const PARAMS: Record<string, string> = { key: 'query.max_limit' };

for (const { kind, stack } of stacks) {
  t.test(`on ${kind}`, async (t) => {
    const admin = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'fields-admin-pw' } });
    t.equal(admin.status, 200, admin.text);
    const adminHeaders = { cookie: (admin.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': admin.body.csrf_token as string };
    const login = async (role: string): Promise<string> => {
      const r = await call(`${stack.url}/auth/login`, { body: { username: role, password: PASSWORD } });
      t.equal(r.status, 200, r.text);
      return r.body.session_id as string;
    };
    const [a, b] = [await login(roleA), await login(roleB)];

    await t.test('every route with a JSON body refuses (or drops) a field it does not declare', async (t) => {
      const doc = (await call(`${stack.url}/openapi.json`)).body;
      const routes: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        for (const [method, op] of Object.entries(ops)) if (op?.requestBody?.content?.['application/json']) routes.push(`${method.toUpperCase()} ${path}`);
      }
      t.ok(routes.length >= 35, `${routes.length} routes take a JSON body`);
      const refused: string[] = [];
      const dropped: string[] = [];
      for (const route of routes) {
        const [method, path] = route.split(' ') as [string, string];
        const url = `${stack.url}${path.replace(/\{([^}]+)\}/g, (_, name: string) => (path.startsWith('/admin/prompts') ? 'sql_generation' : PARAMS[name] ?? '1'))}`;
        const headers: Record<string, string> = path.startsWith('/auth/') ? { 'x-session-id': a } : path.startsWith('/query') ? {} : adminHeaders;
        const r = await call(url, { method, body: { zz_undeclared: 1 }, headers });
        const named = r.status === 400 && /zz_undeclared: not a field of this body/.test(r.body?.error?.message ?? '');
        if (named) {
          t.equal(r.body.error.code, 'VALIDATION_FAILED', route);
          t.same(r.body.error.details?.errors?.[0], { path: '/zz_undeclared', message: 'not a field of this body' }, route);
          refused.push(route);
        } else {
          t.notMatch(r.text, /zz_undeclared/, `${route}: never echoed when dropped`);
          dropped.push(route);
        }
      }
      t.same(dropped.sort(), routes.filter(stripped).sort(), 'only the SQLatte, alarm, schedule and semantic routes drop them; every other route refuses');
      t.ok(refused.length >= 20, `${refused.length} refuse`);
    });

    await t.test('a token field cannot choose the session a token is minted for', async (t) => {
      const r = await call(`${stack.url}/auth/tokens`, { body: { label: 'mine', token: b }, headers: { 'x-session-id': a } });
      t.equal(r.status, 400, r.text);
      t.match(r.body.error.message, /^\/token: not a field of this body \(it takes /);
      const ok = await call(`${stack.url}/auth/tokens`, { body: { label: 'mine' }, headers: { 'x-session-id': a } });
      t.equal(ok.status, 201, ok.text);
      t.equal(ok.body.info.username, roleA, 'minted for the caller\'s own session');
    });

    await t.test('identity fields of other bodies: owner, user, by, asker, id', async (t) => {
      const cases: Array<[string, string, Record<string, unknown>, Record<string, string>]> = [
        ['POST', '/api/query', { question: 'how many?', owner: 's:someone' }, {}],
        ['POST', '/api/feedback', { request_id: 'r-1', rating: 'up', user: 'alice' }, {}],
        ['POST', '/api/schedules/cron-preview', { cron: '0 8 * * *', asker: { user: 'x' } }, adminHeaders],
        ['POST', '/admin/mask-rules', { field_pattern: 'email', strategy: 'hash', by: 'mallory' }, adminHeaders],
        ['POST', '/api/history', { question: 'q', owner: 'a:x' }, adminHeaders],
        ['PUT', '/api/dashboards/d1', { name: 'd', tiles: [{ question: 'q', owner: 'x' }] }, adminHeaders],
      ];
      for (const [method, path, body, headers] of cases) {
        const r = await call(`${stack.url}${path}`, { method, body, headers });
        t.equal(r.status, 400, `${method} ${path}: ${r.text}`);
        t.match(r.body.error.message, /not a field of this body/, `${method} ${path}`);
      }
    });

    await t.test('a dropped field never reaches the SQLatte routes', async (t) => {
      const r = await call(`${stack.url}/auth/query`, { body: { question: 'how many?', bypass_intent: true, owner: 's:other' }, headers: { 'x-session-id': a } });
      t.equal(r.status, 200, r.text);
      t.same(r.body.data, [[1]]);
    });
  });
}
