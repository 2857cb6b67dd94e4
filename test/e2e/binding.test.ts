/**
 * What a caller starts is theirs (issue 25, items 4 and 8), on both HTTP servers: the request
 * id is the edge's own, so an SSE stream never carries another caller's steps whatever
 * `x-request-id` it sends (the same label in another spelling, or another stream's real id);
 * a conversation named on /api/query belongs to whoever started it (their address, or the
 * token they send), as on every other route; and feedback is the asker's — another caller's
 * thumbs on an answer are refused, a legacy widget rates with the session_id it asked with.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { testConfig } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { issueToken } from '../helpers/mcp.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

const nats = await startNats();
const db = await createTestDb('binding');
const adb = await createTestDb('binding_an');
await db.pool.query(`CREATE TABLE items (id int PRIMARY KEY, name text); INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 5) g;`);
const fake = await startFakeLlm();
// each question's SQL names its own marker; a slow one stays open while another runs
fake.fallback((req) => {
  const marker = /marker-([a-z0-9]+)/.exec(req.last)?.[1] ?? 'none';
  const slow = req.last.includes('slowly');
  return { text: sqlAnswer(`SELECT 'secret-${marker}' AS v, count(*) AS n FROM items`), ...(slow ? { delayMs: 700 } : {}) };
});
const kinds = uwsAvailable() ? (['uws', 'node'] as const) : (['node'] as const);
const stacks: Array<{ kind: string; stack: Stack }> = [];
for (const [i, kind] of kinds.entries()) {
  const config = testConfig({
    natsUrl: nats.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: fake.url,
    extra: {
      // the test client is the trusted proxy: X-Forwarded-For names the caller's address
      app: { http_server: kind, trusted_proxies: ['127.0.0.1'] },
      config_db: { encryption_key: generateFernetKey() },
      insights: { mode: 'statistical_only' },
      analytics: { enabled: true, backend: 'postgresql', postgresql: { host: adb.host, port: adb.port, database: adb.name, user: adb.user } },
    },
  });
  // the first stack runs every actor; the second is a second edge on the same bus
  stacks.push({ kind, stack: await startStack(config, i === 0 ? undefined : { edge: true, actors: [] }) });
}
t.teardown(async () => {
  for (const { stack } of [...stacks].reverse()) await stack.stop();
  await fake.close();
  await adb.drop();
  await db.drop();
  await nats.stop();
});

interface SseEvent { event: string; data: any }

/** POST with Accept: text/event-stream: the answer's headers as soon as it opens, its events when it ends. */
async function openSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ rid: string; events: Promise<SseEvent[]> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers }, body: JSON.stringify(body) });
  const rid = res.headers.get('x-request-id') ?? '';
  const events = res.text().then((text) => {
    const out: SseEvent[] = [];
    for (const block of text.split('\n\n')) {
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (data.length) out.push({ event, data: JSON.parse(data.join('\n')) });
    }
    return out;
  });
  return { rid, events };
}

/** The markers a stream's events carry (its SQL and rows name them). */
const markersIn = (events: SseEvent[]): string[] => [...new Set([...JSON.stringify(events).matchAll(/secret-([a-z0-9]+)/g)].map((m) => m[1]!))].sort();

/** Everything the model was shown for the last question. */
const lastPrompt = (): string => {
  const r = fake.requests.at(-1)!;
  return [r.system, ...r.messages.map((m) => m.content)].join('\n');
};

/** Wait until the analytics actor has recorded a question (feedback is judged against it). */
async function recorded(rid: string): Promise<void> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const r = await adb.pool.query('SELECT 1 FROM cortado_analytics_questions WHERE request_id = $1', [rid]).catch(() => ({ rowCount: 0 }));
    if (r.rowCount) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`question ${rid} never recorded`);
}

for (const { kind, stack } of stacks) {
  t.test(`on ${kind}`, async (t) => {
    const q = `${stack.url}/api/query`;

    await t.test('an SSE stream carries its own steps only, whatever x-request-id it sends', async (t) => {
      // the same label in two spellings (they fold to one NATS subject), at the same time
      const [a, b] = await Promise.all([
        openSse(q, { question: `marker-${kind}a slowly` }, { 'x-request-id': 'Shared-Stream.1', 'x-forwarded-for': '10.7.0.1' }),
        openSse(q, { question: `marker-${kind}b slowly` }, { 'x-request-id': 'shared-stream:1', 'x-forwarded-for': '10.7.0.2' }),
      ]);
      t.not(a.rid, b.rid, 'two streams, two ids');
      t.notOk(['Shared-Stream.1', 'shared-stream:1'].includes(a.rid), 'the label is not the id');
      const [ea, eb] = await Promise.all([a.events, b.events]);
      t.same(markersIn(ea), [`${kind}a`], 'the first stream: its own SQL and rows only');
      t.same(markersIn(eb), [`${kind}b`], 'the second: its own only');
      t.equal(ea.filter((e) => e.event === 'sql').length, 1, 'one sql step each (none injected by the other)');
      t.equal(eb.filter((e) => e.event === 'rows').length, 1, 'one rows step each');
      t.equal(ea.find((e) => e.event === 'result')?.data.request_id, a.rid);

      // another stream's real id, sent while it runs, reaches nothing of it
      const victim = await openSse(q, { question: `marker-${kind}v slowly` }, { 'x-forwarded-for': '10.7.0.3' });
      const thief = await openSse(q, { question: `marker-${kind}t slowly` }, { 'x-request-id': victim.rid, 'x-forwarded-for': '10.7.0.4' });
      t.not(thief.rid, victim.rid);
      const [ev, et] = await Promise.all([victim.events, thief.events]);
      t.same(markersIn(et), [`${kind}t`], 'the victim\'s SQL and rows never reach the thief');
      t.same(markersIn(ev), [`${kind}v`], 'and the thief\'s steps never reach the victim');
    });

    await t.test('a conversation on /api/query belongs to whoever started it', async (t) => {
      const conversation_id = `conv-${kind}`;
      const ask = (question: string, headers: Record<string, string>) => call(q, { body: { question, conversation_id }, headers });
      const first = await ask(`marker-${kind}first which item is first?`, { 'x-forwarded-for': '10.8.0.1' });
      t.equal(first.status, 200, first.text);
      const stranger = await ask(`marker-${kind}x and the next?`, { 'x-forwarded-for': '10.8.0.2' });
      t.equal(stranger.status, 200, stranger.text);
      t.notMatch(lastPrompt(), /which item is first/, 'another address naming the same conversation does not see it');
      const { token } = await issueToken(stacks[0]!.stack.running.bus, `binding-${kind}`);
      const withToken = await ask(`marker-${kind}y and the last?`, { 'x-forwarded-for': '10.8.0.1', authorization: `Bearer ${token}` });
      t.equal(withToken.status, 200, withToken.text);
      t.notMatch(lastPrompt(), /which item is first/, 'nor a token sent from the same address: the token is its own owner');
      const same = await ask(`marker-${kind}z and the one after?`, { 'x-forwarded-for': '10.8.0.1' });
      t.equal(same.status, 200, same.text);
      t.match(lastPrompt(), /which item is first\?/, 'the one who started it continues it');
      t.notMatch(lastPrompt(), /and the next\?|and the last\?/, 'with none of the others\' turns');
      const tokenAgain = await ask(`marker-${kind}w once more?`, { 'x-forwarded-for': '10.9.9.9', authorization: `Bearer ${token}` });
      t.equal(tokenAgain.status, 200, tokenAgain.text);
      t.match(lastPrompt(), /and the last\?/, 'the token continues its own from anywhere');
    });

    await t.test('feedback is the asker\'s', async (t) => {
      const mine = { 'x-forwarded-for': '10.6.0.1' };
      const asked = await call(q, { body: { question: `marker-${kind}fb how many items?` }, headers: mine });
      t.equal(asked.status, 200, asked.text);
      const rid = asked.body.request_id as string;
      await recorded(rid);
      const rate = (body: Record<string, unknown>, headers: Record<string, string>) => call(`${stack.url}/api/feedback`, { body, headers });
      const stranger = await rate({ request_id: rid, rating: 'down', comment: 'not mine' }, { 'x-forwarded-for': '10.6.0.2' });
      t.equal(stranger.status, 403, `another caller's thumbs are refused: ${stranger.text}`);
      t.equal(stranger.body.error.code, 'FORBIDDEN');
      const own = await rate({ request_id: rid, rating: 'up' }, mine);
      t.same(own.body, { ok: true }, own.text);

      // a legacy widget: known by its session_id and address, as it asked
      const widget = { 'x-forwarded-for': '10.6.0.3' };
      const legacy = await call(`${stack.url}/query`, { body: { question: `marker-${kind}lg how many items?`, session_id: `w-${kind}` }, headers: widget });
      t.equal(legacy.status, 200, legacy.text);
      const lrid = legacy.body.request_id as string;
      await recorded(lrid);
      t.equal((await rate({ request_id: lrid, rating: 'up' }, widget)).status, 403, 'without its session_id it is another widget');
      t.equal((await rate({ request_id: lrid, rating: 'up', session_id: `w-${kind}` }, { 'x-forwarded-for': '10.6.0.4' })).status, 403, 'the same session_id from another address too');
      t.same((await rate({ request_id: lrid, rating: 'up', session_id: `w-${kind}` }, widget)).body, { ok: true }, 'the widget that asked');

      const kept = await adb.pool.query('SELECT request_id, rating FROM cortado_analytics_feedback WHERE request_id = ANY($1) ORDER BY request_id', [[rid, lrid]]);
      t.same(kept.rows.map((r: { request_id: string; rating: string }) => [r.request_id, r.rating]).sort(), [[rid, 'up'], [lrid, 'up']].sort(), 'only the askers\' ratings are kept');
    });
  });
}
