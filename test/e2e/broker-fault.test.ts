/**
 * The broker dies under load, as an operator would see it: questions keep coming (~8/s, the fake
 * model, a real PostgreSQL, config_db on PostgreSQL so the audit rows are in a real table) while
 * the nats-server is killed (`kill -9`) and started again ~3 s later on the same port and
 * JetStream store. The questions take turns over every channel a client asks by: JSON
 * (/api/query), the legacy route (/query), SSE (/api/query with Accept: text/event-stream) and
 * the WebSocket (/api/ws). Afterwards every question answered has exactly one audit row of each
 * of its events — nothing answered is lost — and every question that failed did so with a clear
 * code marked retryable, quickly, whatever its channel (issue 31: a stream once failed at once
 * with INTERNAL, not retryable, where JSON waited and was answered). In the one-process
 * deployment and in the edge|actors one (two `cortado` processes).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import YAML from 'yaml';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { GUARD_SCHEMA_SQL } from '../fixtures/guard-cases.js';
import { freePort, startBroker, type Broker } from '../helpers/broker.js';
import { testConfigObject } from '../helpers/config.js';
import { sqlAnswer, startFakeLlm } from '../helpers/fake-llm.js';
import { createTestDb, type TestDb } from '../helpers/pg.js';
import { cortado as spawnCortado, until as waitUntil, type Proc } from '../helpers/processes.js';

/** the load: one question every INTERVAL_MS for LOAD_MS; the broker dies at KILL_AT_MS for DOWN_MS */
const INTERVAL_MS = 125;
const LOAD_MS = 9_000;
const KILL_AT_MS = 2_500;
const DOWN_MS = 3_000;
/** a question must settle within this long, whatever happened to the broker */
const SETTLE_MS = 15_000;
/** what a question failed by the outage may answer */
const CLEAR = new Set(['ACTOR_UNAVAILABLE', 'AUDIT_UNAVAILABLE', 'TIMEOUT', 'SHUTTING_DOWN']);

// two scenarios of real processes: on a loaded machine a start alone has taken 40 s
t.setTimeout(420_000);

const db = await createTestDb('bfault');
await db.pool.query(GUARD_SCHEMA_SQL);
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer('SELECT count(*) AS orders FROM orders') }));
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-bfault-'));
t.teardown(async () => {
  await fake.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

function cortado(args: string[]): Proc {
  return spawnCortado(args, { logLevel: 'warn', keepChars: 200_000 });
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  return waitUntil(what, check, ms);
}

function writeConfig(name: string, broker: Broker, cfgDb: TestDb, httpPort: number): string {
  const obj = testConfigObject({
    natsUrl: broker.url,
    db: { host: db.host, port: db.port, name: db.name, user: db.user },
    llmUrl: fake.url,
    extra: {
      config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    },
  });
  (obj.app as Record<string, unknown>).port = httpPort;
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(file, YAML.stringify(obj));
  return file;
}

/** the channels a question takes in turn */
const CHANNELS = ['json', 'legacy', 'sse', 'ws'] as const;
type Channel = (typeof CHANNELS)[number];

interface Asked {
  n: number;
  channel: Channel;
  /** ms after the load started */
  sentAt: number;
  /** an answer came (200 with the answer, an SSE `result` event, a WebSocket `result` frame) */
  answered: boolean;
  /** the HTTP status (101 for the WebSocket, -1: no answer at all) */
  status: number;
  ms: number;
  rid?: string;
  code?: string;
  retryable?: boolean;
}

type Outcome = Omit<Asked, 'n' | 'channel' | 'sentAt' | 'ms'>;
interface WireError { request_id?: string; error?: { code?: string; retryable?: boolean; request_id?: string } }

function failure(status: number, body: WireError | undefined, rid: string | undefined): Outcome {
  const e = body?.error;
  const id = rid ?? e?.request_id;
  return { answered: false, status, ...(id ? { rid: id } : {}), ...(e?.code ? { code: e.code } : {}), ...(e?.retryable !== undefined ? { retryable: e.retryable } : {}) };
}

/** One question over one channel, as a client of that channel sees its outcome. */
async function askOnce(base: string, channel: Channel, question: string): Promise<Outcome> {
  const signal = AbortSignal.timeout(SETTLE_MS * 2);
  if (channel === 'ws') return askWs(base, question);
  const res = await fetch(`${base}${channel === 'legacy' ? '/query' : '/api/query'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(channel === 'sse' ? { accept: 'text/event-stream' } : {}) },
    body: JSON.stringify({ question }),
    signal,
  });
  const headerRid = res.headers.get('x-request-id') ?? undefined;
  if (channel !== 'sse' || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const body = (await res.json().catch(() => undefined)) as WireError | undefined;
    if (res.status === 200) {
      const rid = body?.request_id ?? headerRid;
      return { answered: true, status: 200, ...(rid ? { rid } : {}) };
    }
    return failure(res.status, body, headerRid);
  }
  // SSE: the outcome is the `result` or `error` event
  const text = await res.text();
  for (const block of text.split('\n\n')) {
    const event = /^event: (.+)$/m.exec(block)?.[1];
    const data = /^data: (.+)$/m.exec(block)?.[1];
    if (event === 'result') return { answered: true, status: res.status, ...(headerRid ? { rid: headerRid } : {}) };
    if (event === 'error') return failure(res.status, JSON.parse(data ?? '{}') as WireError, headerRid);
  }
  return { answered: false, status: res.status, code: 'stream ended without a result or an error' };
}

/** One question over /api/ws: the frames until `end`. */
function askWs(base: string, question: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/ws`);
    let outcome: Outcome | undefined;
    const timer = setTimeout(() => { ws.close(); }, SETTLE_MS * 2);
    ws.on('open', () => ws.send(JSON.stringify({ type: 'ask', id: 'q', question })));
    ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString()) as { event: string; request_id?: string; data: WireError };
      if (frame.event === 'result') outcome = { answered: true, status: 101, ...(frame.request_id ? { rid: frame.request_id } : {}) };
      else if (frame.event === 'error') outcome = failure(101, frame.data, frame.request_id);
      else if (frame.event === 'end') ws.close();
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      clearTimeout(timer);
      resolve(outcome ?? { answered: false, status: -1, code: 'the WebSocket closed without a result or an error' });
    });
  });
}

/** ~8 questions a second for LOAD_MS, over each channel in turn; the broker is killed at KILL_AT_MS and started again DOWN_MS later. */
async function underLoad(url: string, broker: Broker): Promise<{ asked: Asked[]; downFrom: number; downTo: number }> {
  const t0 = Date.now();
  let downFrom = 0;
  let downTo = 0;
  const outage = (async () => {
    await new Promise((r) => setTimeout(r, KILL_AT_MS));
    downFrom = Date.now() - t0;
    await broker.kill();
    await new Promise((r) => setTimeout(r, DOWN_MS));
    await broker.start();
    downTo = Date.now() - t0;
  })();
  const pending: Array<Promise<Asked>> = [];
  for (let n = 0; Date.now() - t0 < LOAD_MS; n++) {
    const sentAt = Date.now() - t0;
    const channel = CHANNELS[n % CHANNELS.length]!;
    pending.push((async (): Promise<Asked> => {
      try {
        const out = await askOnce(url, channel, `how many orders? (#${n})`);
        return { n, channel, sentAt, ms: Date.now() - t0 - sentAt, ...out };
      } catch (err) {
        return { n, channel, sentAt, answered: false, status: -1, ms: Date.now() - t0 - sentAt, code: (err as Error).name };
      }
    })());
    const next = t0 + (n + 1) * INTERVAL_MS;
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
  }
  await outage;
  return { asked: await Promise.all(pending), downFrom, downTo };
}

/** audit rows per request id and event type */
async function auditRows(cfgDb: TestDb, rids: string[]): Promise<Map<string, Map<string, number>>> {
  const r = await cfgDb.pool.query<{ request_id: string; type: string; n: number }>(
    'SELECT request_id, type, count(*)::int AS n FROM cortado_audit_log WHERE request_id = ANY($1) GROUP BY 1, 2',
    [rids],
  );
  const out = new Map<string, Map<string, number>>();
  for (const row of r.rows) {
    const m = out.get(row.request_id) ?? new Map<string, number>();
    m.set(row.type, row.n);
    out.set(row.request_id, m);
  }
  return out;
}

async function scenario(t: Test, name: string, roles: string[][]): Promise<void> {
  const broker = await startBroker();
  t.teardown(() => broker.stop());
  const cfgDb = await createTestDb(`bf${name.slice(0, 3)}`);
  t.teardown(() => cfgDb.drop());
  const httpPort = await freePort();
  const file = writeConfig(name, broker, cfgDb, httpPort);
  const procs = roles.map((r) => cortado(['--config', file, ...r]));
  const url = `http://127.0.0.1:${httpPort}`;
  const started = Date.now();
  await until('health', async () => (await (await fetch(`${url}/health`)).json() as { database?: string }).database === 'ok', 90_000).catch((err: unknown) => {
    for (const p of procs) t.comment(p.output().slice(-8_000));
    throw err;
  });
  t.comment(`healthy after ${Date.now() - started} ms`);
  // a question answered first: every actor of every process is up (health asks only the executor)
  await until('a first answer', async () => (await fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'warm up' }) })).status === 200);

  const { asked, downFrom, downTo } = await underLoad(url, broker);
  const answered = asked.filter((a) => a.answered);
  const failed = asked.filter((a) => !a.answered);
  const rids = answered.map((a) => a.rid!).filter(Boolean);
  t.equal(rids.length, answered.length, 'every answer carries its request id');

  // the audit actor reads the stream every 100 ms: wait until every answer's events are there
  let rows = new Map<string, Map<string, number>>();
  await until('every answered question audited', async () => {
    rows = await auditRows(cfgDb, rids);
    return rids.every((rid) => rows.get(rid)?.get('query.executed'));
  }, 20_000).catch(() => undefined);

  const audited = rids.filter((rid) => rows.get(rid)?.get('query.executed') === 1 && rows.get(rid)?.get('query.generated') === 1);
  const missing = rids.filter((rid) => !rows.get(rid)?.get('query.executed'));
  const doubled = rids.filter((rid) => [...(rows.get(rid)?.values() ?? [])].some((n) => n > 1));
  const inOutage = asked.filter((a) => a.sentAt >= downFrom && a.sentAt < downTo);
  const byCode = new Map<string, number>();
  for (const f of failed) {
    const key = `${f.channel} ${f.status} ${f.code ?? ''}${f.retryable === false ? ' (not retryable)' : ''}`;
    byCode.set(key, (byCode.get(key) ?? 0) + 1);
  }
  const perChannel = CHANNELS.map((c) => `${c} ${answered.filter((a) => a.channel === c).length}/${asked.filter((a) => a.channel === c).length}`).join(', ');
  t.comment(
    `${name}: ${asked.length} questions (${inOutage.length} sent while the broker was down, ${downFrom}–${downTo} ms); ` +
      `${answered.length} answered (${perChannel}), ${audited.length} of them audited (query.generated + query.executed, once each); ` +
      `failed: ${JSON.stringify(Object.fromEntries(byCode))} (sent at ${failed.map((f) => f.sentAt).join(', ')} ms); slowest ${Math.max(...asked.map((a) => a.ms))} ms`,
  );

  t.ok(asked.length >= 40, `${asked.length} questions asked`);
  t.ok(inOutage.length >= 15, `${inOutage.length} of them while the broker was down`);
  for (const c of CHANNELS) t.ok(inOutage.filter((a) => a.channel === c).length >= 3, `${c}: questions asked while the broker was down`);
  t.ok(answered.length >= asked.length / 2, `most answered (${answered.length})`);
  t.same(missing, [], 'every question answered has its audit row: nothing answered is lost');
  t.same(doubled, [], 'and no event of it is recorded twice');
  t.equal(audited.length, answered.length, 'each answered question: one query.generated and one query.executed row');
  for (const f of failed) {
    const clear = (f.status >= 500 && f.status < 600) || ((f.channel === 'sse' || f.channel === 'ws') && f.status > 0);
    if (!(clear && f.code && CLEAR.has(f.code) && f.retryable === true)) {
      t.fail(`question #${f.n} (${f.channel}) failed without a clear, retryable code: ${f.status} ${f.code ?? ''} retryable ${String(f.retryable)}`);
    }
  }
  t.ok(asked.every((a) => a.ms < SETTLE_MS), 'no question hangs: each settled within 15 s');
  const after = await fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'after' }) });
  t.equal(after.status, 200, 'answered again after the outage');

  for (const p of procs) p.child.kill('SIGTERM');
  const codes = await Promise.all(procs.map((p) => p.exited));
  t.same(codes, procs.map(() => 0), 'each process exits 0');
  for (const p of procs) {
    t.notMatch(p.output(), /never stored|an event was dropped|refused an event for good/, 'no event lost on the way, none at shutdown');
  }
  if (t.passing() === false) for (const p of procs) t.comment(p.output().slice(-8_000));
}

if (!process.env.BF_ONLY_SPLIT) t.test('one process', { timeout: 180_000 }, (t) => scenario(t, 'one', [[]]));
t.test('edge | actors', { timeout: 180_000 }, (t) => scenario(t, 'split', [['--role', 'edge'], ['--role', 'actors']]));
