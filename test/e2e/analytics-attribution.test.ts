/**
 * Whose question it is, in analytics: a question asked by someone signed in is theirs in the
 * report however it reached the edge — the dashboard's /api/query as JSON and as SSE, the
 * WebSocket, the legacy /query — with the admin panel's cookie or a database login's; an
 * anonymous one stays nobody's, and a cookie write without its CSRF token names nobody (it
 * proves nothing). A real stack: private NATS, PostgreSQL to question and for analytics, and
 * the scripted model.
 */
import t from 'tap';
import WebSocket from 'ws';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import type { AnalyticsReport } from '../../protocol/schemas/analytics.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';

const ADMIN = { username: 'admin', password: 'attribution-admin-pw' };
const ROLE = `attr_${process.pid}`;
const ROLE_PW = 'Attr-Secret-1';
const nats = await startNats();
const db = await createTestDb('attr');
await db.pool.query(`
  CREATE TABLE orders (id int PRIMARY KEY, amount numeric(10,2) NOT NULL);
  INSERT INTO orders SELECT g, g * 10 FROM generate_series(1, 20) g;
  CREATE ROLE ${ROLE} LOGIN PASSWORD '${ROLE_PW}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${ROLE};
  GRANT USAGE ON SCHEMA public TO ${ROLE};
  GRANT SELECT ON orders TO ${ROLE};
`);
const store = await createTestDb('attr_store');
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS n FROM orders') }));
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  llmUrl: fake.url,
  extra: {
    admin: { enabled: true, ...ADMIN },
    config_db: { encryption_key: generateFernetKey() },
    plugins: { auth: { enabled: true, session_ttl_minutes: 30, allowed_db_types: ['postgresql'], allowed_catalogs: [{ name: db.name, allowed_schemas: ['public'] }] } },
    insights: { mode: 'statistical_only' },
    analytics: { enabled: true, store_questions: true, postgresql: { host: store.host, port: store.port, database: store.name, user: store.user } },
  },
}));
t.teardown(async () => {
  await stack.stop();
  await fake.close();
  await store.drop();
  await db.drop();
  await db.pool.query(`DROP ROLE IF EXISTS ${ROLE}`).catch(() => undefined);
  await nats.stop();
});

interface Session { cookie: string; csrf: string }
async function signIn(path: string, body: unknown): Promise<Session> {
  const r = await call(`${stack.url}${path}`, { body });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
  const cookie = (r.headers.get('set-cookie') ?? '').split(';')[0]!;
  const csrf: string = r.body.csrf_token ?? (await call(`${stack.url}${path.replace('login', 'session')}`, { headers: { cookie } })).body?.csrf_token;
  return { cookie, csrf };
}
const admin = await signIn('/admin/login', ADMIN);
const dbUser = await signIn('/auth/login', { username: ROLE, password: ROLE_PW });

const headersOf = (s: Session | undefined, extra: Record<string, string> = {}): Record<string, string> =>
  s ? { cookie: s.cookie, 'x-csrf-token': s.csrf, ...extra } : extra;

/** Ask on /api/query as JSON; the request id. */
async function askJson(s: Session | undefined, question: string, extra: Record<string, string> = {}): Promise<string> {
  const r = await call(`${stack.url}/api/query`, { body: { question, widget: 'dashboard' }, headers: headersOf(s, extra) });
  if (r.status !== 200) throw new Error(`/api/query: ${r.status} ${r.text}`);
  return r.body.request_id;
}
/** Ask on /api/query as SSE; the request id. */
async function askSse(s: Session, question: string): Promise<string> {
  const res = await fetch(`${stack.url}/api/query`, { method: 'POST', headers: headersOf(s, { 'content-type': 'application/json', accept: 'text/event-stream' }), body: JSON.stringify({ question, widget: 'dashboard' }) });
  const text = await res.text();
  if (res.status !== 200 || !text.includes('event: result')) throw new Error(`SSE: ${res.status} ${text.slice(0, 300)}`);
  return res.headers.get('x-request-id') ?? '';
}
/** Ask on the legacy /query; the request id. */
async function askLegacy(s: Session, question: string): Promise<string> {
  const r = await call(`${stack.url}/query`, { body: { question, session_id: 'legacy-attr' }, headers: headersOf(s) });
  if (r.status !== 200) throw new Error(`/query: ${r.status} ${r.text}`);
  return r.headers.get('x-request-id') ?? '';
}
/** Ask over the WebSocket, from this server's own page (its cookies are used); resolves on the answer. */
async function askWs(s: Session, question: string): Promise<void> {
  const ws = new WebSocket(`${stack.url.replace('http', 'ws')}/api/ws`, { headers: { cookie: s.cookie, origin: stack.url } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ type: 'ask', id: 'a1', question, widget: 'dashboard', headers: { 'x-csrf-token': s.csrf } })));
    ws.on('message', (m) => {
      const f = JSON.parse(String(m));
      if (f.event === 'error') reject(new Error(`ws: ${String(m).slice(0, 300)}`));
      if (f.event === 'end') resolve();
    });
    ws.once('error', reject);
    setTimeout(() => reject(new Error('ws: no answer in 30 s')), 30_000);
  }).finally(() => ws.close());
}

async function report(): Promise<AnalyticsReport> {
  const r = await call(`${stack.url}/api/analytics/report`, { headers: { cookie: admin.cookie } });
  if (r.status !== 200) throw new Error(`report: ${r.status} ${r.text}`);
  return r.body as AnalyticsReport;
}
async function reportWith(n: number): Promise<AnalyticsReport> {
  const until = Date.now() + 30_000;
  for (;;) {
    const r = await report();
    if (r.totals.questions >= n) return r;
    if (Date.now() > until) throw new Error(`the report holds ${r.totals.questions} questions, not ${n}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

t.test('each signed-in asker is named in the report, whatever the channel', { timeout: 120_000 }, async (t) => {
  const rated = await askJson(admin, 'How many orders? (admin, JSON)');
  await askSse(admin, 'How many orders? (admin, SSE)');
  await askLegacy(admin, 'How many orders? (admin, legacy)');
  await askWs(admin, 'How many orders? (admin, WebSocket)');
  await askJson(dbUser, 'How many orders? (database login, JSON)');
  await askSse(dbUser, 'How many orders? (database login, SSE)');
  await askJson(undefined, 'How many orders? (nobody)');
  // a cookie write without its CSRF token proves nothing: asked, but by nobody
  await askJson(undefined, 'How many orders? (admin cookie, no CSRF token)', { cookie: admin.cookie });

  const r = await reportWith(8);
  const by = Object.fromEntries(r.users.map((u) => [u.user, u.questions]));
  t.same(by, { admin: 4, [ROLE]: 2 }, 'the admin asked four, the database login two; the anonymous and the unproven ones are nobody\'s');
  t.equal(r.totals.users, 2, 'two users');

  // the admin's thumbs on the dashboard are the admin's too (POST /api/feedback, an `any` route)
  const fb = await call(`${stack.url}/api/feedback`, { body: { request_id: rated, rating: 'down', comment: 'too slow' }, headers: headersOf(admin) });
  t.equal(fb.status, 200, fb.text);
  const kept = await store.pool.query('SELECT username FROM cortado_analytics_feedback WHERE request_id = $1', [rated]);
  t.same(kept.rows.map((x) => x.username), ['admin'], 'the rating is kept with its user');
});
