/**
 * GET /api/ws on both HTTP servers: a question asked over a WebSocket streams the same events,
 * with the same payloads, as the same question over SSE; bad frames get an error frame and the
 * connection lives on; an oversize frame closes it with 1009; the Origin is checked against
 * `cors`; the caller is checked per frame as on HTTP (401 without a session where one is needed,
 * a token in the frame's headers); a held confirmation is run with a `confirm` frame.
 */
import t from 'tap';
import WebSocket from 'ws';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, callSse, startStack } from '../helpers/stack.js';
import { uwsAvailable } from '../../edge/http/server.js';

interface Frame { event: string; request_id: string; ref?: string; id?: string; data: any }

const nats = await startNats();
const db = await createTestDb('wsedge');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT name, country FROM customers ORDER BY name', 'Customers by name.') }));
t.teardown(async () => {
  await fake.close();
  await db.drop();
  await nats.stop();
});

/** Open a socket; resolves once open (or rejects with the refusal's status). */
function open(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; frames: Frame[]; next(pred: (f: Frame) => boolean): Promise<Frame>; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const frames: Frame[] = [];
    const waiters: Array<{ pred: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];
    ws.on('message', (buf) => {
      const f = JSON.parse(buf.toString()) as Frame;
      frames.push(f);
      for (const w of [...waiters]) if (w.pred(f)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(f); }
    });
    const closed = new Promise<{ code: number; reason: string }>((res) => ws.on('close', (code, reason) => res({ code, reason: reason.toString() })));
    ws.on('unexpected-response', (_req, res) => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode })));
    ws.on('error', reject);
    ws.on('open', () => resolve({
      ws, frames, closed,
      next: (pred) => {
        const found = frames.find(pred);
        return found ? Promise.resolve(found) : new Promise((res) => waiters.push({ pred, resolve: res }));
      },
    }));
  });
}

const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
for (const kind of kinds) {
  t.test(`on ${kind}`, async (t) => {
    const stack = await startStack(testConfig({
      natsUrl: nats.url,
      db: { host: db.host, port: db.port, name: db.name, user: db.user },
      llmUrl: fake.url,
      extra: {
        app: { http_server: kind, max_body_kb: 8 },
        cors: { allow_origins: ['https://app.example'], allow_credentials: true },
        admin: { enabled: true, username: 'admin', password: 'ws-admin-pw' },
        query: { require_session: true, confirm_before_execute: true },
      },
    }));
    t.teardown(() => stack.stop());
    t.equal(stack.running.edge?.kind, kind);
    const wsUrl = `${stack.url.replace('http', 'ws')}/api/ws`;

    await t.test('an ask streams the events SSE sends, with the same payloads', async (t) => {
      const body = { question: 'list the customers by name' };
      const sse = await callSse(`${stack.url}/api/query`, body);
      const c = await open(wsUrl);
      c.ws.send(JSON.stringify({ type: 'ask', id: 'q1', ...body }));
      const end = await c.next((f) => f.event === 'end');
      const mine = c.frames.filter((f) => f.ref === 'q1' && f.event !== 'end');
      t.same(mine.map((f) => f.event), sse.events.map((e) => e.event), 'the same events in the same order');
      t.ok(mine.every((f) => f.request_id === end.request_id), 'one request id for the whole answer');
      const pick = (list: Array<{ event: string; data: any }>, name: string) => list.find((e) => e.event === name)?.data;
      t.same(pick(mine, 'sql'), pick(sse.events, 'sql'), 'sql payload');
      t.same(pick(mine, 'rows'), pick(sse.events, 'rows'), 'rows payload');
      const result = pick(mine, 'result');
      t.same([result.sql, result.columns, result.rows], [pick(sse.events, 'result').sql, pick(sse.events, 'result').columns, pick(sse.events, 'result').rows]);
      t.equal(result.request_id, end.request_id);
      t.ok(result.rows.length > 0, 'rows came back');
      c.ws.close();
    });

    await t.test('bad frames: an error frame each, and the connection stays usable', async (t) => {
      const c = await open(wsUrl);
      c.ws.send('{"type": "ask", ');
      const bad = await c.next((f) => f.event === 'error');
      t.equal(bad.data.error.code, 'MALFORMED_BODY');
      t.equal(bad.data.error.request_id, bad.request_id);
      c.ws.send(JSON.stringify({ type: 'shout', id: 'x1' }));
      const unknown = await c.next((f) => f.event === 'error' && f.ref === 'x1');
      t.match(unknown.data.error.message, /"ask" or "confirm"/);
      c.ws.send(JSON.stringify({ type: 'ask', id: 'x2', endpoint: '/admin/config', question: 'hi' }));
      t.match((await c.next((f) => f.event === 'error' && f.ref === 'x2')).data.error.message, /endpoint: one of/);
      c.ws.send(JSON.stringify({ type: 'ask', id: 'x3', question: '' }));
      t.equal((await c.next((f) => f.event === 'error' && f.ref === 'x3')).data.error.code, 'VALIDATION_FAILED', 'the route validates the body');
      c.ws.send(Buffer.from([1, 2, 3]), { binary: true });
      t.match((await c.next((f) => f.event === 'error' && /binary/.test(f.data.error.message))).data.error.code, 'VALIDATION_FAILED');
      c.ws.send(JSON.stringify({ type: 'ask', id: 'ok', question: 'customers please' }));
      t.ok((await c.next((f) => f.event === 'result' && f.ref === 'ok')).data.rows.length > 0, 'a good frame after the bad ones is answered');
      c.ws.close();
    });

    await t.test('a frame over app.max_body_kb closes the connection with 1009', async (t) => {
      const c = await open(wsUrl);
      c.ws.send(JSON.stringify({ type: 'ask', question: 'x'.repeat(9 * 1024) }));
      const closed = await c.closed;
      t.equal(closed.code, 1009);
    });

    await t.test('the Origin is checked against cors; cookies only for credentialed origins', async (t) => {
      const refused = await open(wsUrl, { origin: 'https://evil.example' }).then(() => 0, (e: { status: number }) => e.status);
      t.equal(refused, 403, 'a foreign origin is refused');
      const allowed = await open(wsUrl, { origin: 'https://app.example' });
      allowed.ws.close();
      const same = await open(wsUrl, { origin: stack.url });
      same.ws.close();
      t.pass('this server\'s own origin and a listed one are let in');
      const plain = await call(`${stack.url}/api/ws`);
      t.equal(plain.status, 400, 'a GET without upgrade is told what the path is for');
      t.match(plain.body.error.message, /WebSocket upgrades only/);
    });

    await t.test('the caller is checked per frame; confirm runs the held SQL', async (t) => {
      const c = await open(wsUrl);
      c.ws.send(JSON.stringify({ type: 'ask', id: 'anon', endpoint: '/query', question: 'customers', session_id: 'w1' }));
      const anon = await c.next((f) => f.ref === 'anon' && f.event === 'error');
      t.equal(anon.data.error.code, 'UNAUTHORIZED', 'query.require_session: no session, no answer');

      const login = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'ws-admin-pw' } });
      const admin = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '', 'x-csrf-token': login.body.csrf_token as string };
      const issued = await call(`${stack.url}/admin/tokens`, { body: { username: 'wendy', label: 'wendy' }, headers: admin });
      t.equal(issued.status, 201, issued.text);
      const headers = { authorization: `Bearer ${issued.body.token as string}` };
      // an API token always executes (SPEC: confirm_before_execute is for the two interactive widgets only)
      c.ws.send(JSON.stringify({ type: 'ask', id: 'tok', endpoint: '/query', headers, question: 'customers', session_id: 'w1' }));
      const direct = await c.next((f) => f.ref === 'tok' && (f.event === 'result' || f.event === 'error'));
      t.equal(direct.event, 'result', JSON.stringify(direct.data));
      t.notOk(direct.data.requires_confirmation, 'an API token is not held for confirmation');
      t.ok(direct.data.data.length > 0, 'its SQL ran at once');
      c.ws.close();

      // a widget's visitor (query.require_session turned off at run time, as an admin would) is held, then confirms
      const off = await call(`${stack.url}/admin/config/query.require_session`, { method: 'PUT', body: { value: false }, headers: admin });
      t.equal(off.status, 200, off.text);
      const s = await open(wsUrl);
      s.ws.send(JSON.stringify({ type: 'ask', id: 'anon2', endpoint: '/query', question: 'customers', session_id: 'w2' }));
      const held = await s.next((f) => f.ref === 'anon2' && (f.event === 'result' || f.event === 'error'));
      t.equal(held.data.requires_confirmation, true, `the SQL waits for confirmation (${JSON.stringify(held.data).slice(0, 200)})`);
      t.match(held.data.sql, /FROM customers/);
      s.ws.send(JSON.stringify({ type: 'confirm', id: 'go', confirmation_id: held.data.confirmation_id, session_id: 'w2' }));
      const ran = await s.next((f) => f.ref === 'go' && (f.event === 'result' || f.event === 'error'));
      t.equal(ran.event, 'result', JSON.stringify(ran.data));
      t.ok(ran.data.data?.length > 0, 'the confirmed SQL ran');
      s.ws.send(JSON.stringify({ type: 'confirm', id: 'again', confirmation_id: held.data.confirmation_id, session_id: 'w2' }));
      t.equal((await s.next((f) => f.ref === 'again' && f.event === 'error')).data.error.code, 'NOT_FOUND', 'a confirmation runs once');
      s.ws.close();
    });
  });
}
