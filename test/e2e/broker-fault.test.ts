/**
 * The broker dies under load, as an operator would see it: questions keep coming (~8/s, over
 * HTTP, the fake model, a real PostgreSQL, config_db on PostgreSQL so the audit rows are in a
 * real table) while the nats-server is killed (`kill -9`) and started again ~3 s later on the
 * same port and JetStream store. Afterwards every question answered 200 has exactly one audit
 * row of each of its events — nothing answered is lost — and every question that failed did
 * so with a clear code, quickly. In the one-process deployment and in the edge|actors one
 * (two `cortado` processes).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
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

interface Asked {
  n: number;
  /** ms after the load started */
  sentAt: number;
  status: number;
  ms: number;
  rid?: string;
  code?: string;
}

/** ~8 questions a second for LOAD_MS; the broker is killed at KILL_AT_MS and started again DOWN_MS later. */
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
    pending.push((async (): Promise<Asked> => {
      try {
        const res = await fetch(`${url}/api/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ question: `how many orders? (#${n})` }),
          signal: AbortSignal.timeout(SETTLE_MS * 2),
        });
        const body = (await res.json().catch(() => undefined)) as { request_id?: string; error?: { code?: string } } | undefined;
        const rid = body?.request_id ?? res.headers.get('x-request-id') ?? undefined;
        return { n, sentAt, status: res.status, ms: Date.now() - t0 - sentAt, ...(rid ? { rid } : {}), ...(body?.error?.code ? { code: body.error.code } : {}) };
      } catch (err) {
        return { n, sentAt, status: -1, ms: Date.now() - t0 - sentAt, code: (err as Error).name };
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
  await until('health', async () => (await (await fetch(`${url}/health`)).json() as { database?: string }).database === 'ok');
  // a question answered first: every actor of every process is up (health asks only the executor)
  await until('a first answer', async () => (await fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'warm up' }) })).status === 200);

  const { asked, downFrom, downTo } = await underLoad(url, broker);
  const answered = asked.filter((a) => a.status === 200);
  const failed = asked.filter((a) => a.status !== 200);
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
  for (const f of failed) byCode.set(`${f.status} ${f.code ?? ''}`, (byCode.get(`${f.status} ${f.code ?? ''}`) ?? 0) + 1);
  t.comment(
    `${name}: ${asked.length} questions (${inOutage.length} sent while the broker was down, ${downFrom}–${downTo} ms); ` +
      `${answered.length} answered 200, ${audited.length} of them audited (query.generated + query.executed, once each); ` +
      `failed: ${JSON.stringify(Object.fromEntries(byCode))} (sent at ${failed.map((f) => f.sentAt).join(', ')} ms); slowest ${Math.max(...asked.map((a) => a.ms))} ms`,
  );

  t.ok(asked.length >= 60, `${asked.length} questions asked`);
  t.ok(inOutage.length >= 15, `${inOutage.length} of them while the broker was down`);
  t.ok(answered.length >= asked.length / 2, `most answered (${answered.length})`);
  t.same(missing, [], 'every question answered 200 has its audit row: nothing answered is lost');
  t.same(doubled, [], 'and no event of it is recorded twice');
  t.equal(audited.length, answered.length, 'each answered question: one query.generated and one query.executed row');
  for (const f of failed) {
    if (!(f.status >= 500 && f.status < 600 && f.code && CLEAR.has(f.code))) t.fail(`question #${f.n} failed without a clear code: ${f.status} ${f.code ?? ''}`);
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

if (!process.env.BF_ONLY_SPLIT) t.test('one process', { timeout: 90_000 }, (t) => scenario(t, 'one', [[]]));
t.test('edge | actors', { timeout: 90_000 }, (t) => scenario(t, 'split', [['--role', 'edge'], ['--role', 'actors']]));
