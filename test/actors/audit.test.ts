/**
 * The audit actor reads the event stream through a durable consumer: killed (SIGKILL) in the
 * middle of a backlog and started again, it writes every event exactly once to config_db.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import YAML from 'yaml';
import { Bus } from '../../protocol/bus.js';
import { createLogger } from '../../protocol/log.js';
import { QueryExecutedEvt } from '../../protocol/subjects.js';
import { ROOT } from '../../config/load.js';
import { toEntry } from '../../actors/audit/handle.js';
import { generateFernetKey } from '../../actors/identity/fernet.js';
import { testConfigObject } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

const N = 1500;
const nats = await startNats();
const cfgDb = await createTestDb('audit');
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-audit-'));
const log = createLogger({ svc: 'test', level: 'silent' });
t.teardown(async () => {
  await cfgDb.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

const obj = testConfigObject({ natsUrl: nats.url });
Object.assign(obj, { config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } } });
const file = path.join(dir, 'audit.yaml');
writeFileSync(file, YAML.stringify(obj));

function auditProcess(): { proc: ChildProcess; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file, '--role', 'actors:audit'], { cwd: ROOT, stdio: 'ignore' });
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  return { proc, exited };
}

async function count(): Promise<{ rows: number; distinct: number }> {
  const r = await cfgDb.pool.query('SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS distinct FROM cortado_audit_log').catch(() => ({ rows: [{ rows: 0, distinct: 0 }] }));
  return r.rows[0] as { rows: number; distinct: number };
}

t.test('the audit entry of an event', async (t) => {
  const e = toEntry('evt.query.executed', { id: 'e1', ts: '2026-11-01T00:00:00Z', request_id: 'r1', user: 'ann', channel: 'api', sql: 'SELECT 1' });
  t.match(e, { event_id: 'e1', type: 'query.executed', code: 'OK', request_id: 'r1', user: 'ann', channel: 'api' });
  const a = toEntry('evt.other', { no: 'id' });
  const b = toEntry('evt.other', { no: 'id' });
  t.equal(a.event_id, b.event_id, 'an event without id gets a stable one');
});

t.test('killed mid-stream and restarted: nothing lost, nothing duplicated', { timeout: 150_000 }, async (t) => {
  const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'publisher', log });
  t.teardown(() => bus.close());
  await bus.ensureEventStream();
  const ids: string[] = [];
  for (let i = 0; i < N; i++) {
    const id = randomUUID();
    ids.push(id);
    bus.publish(QueryExecutedEvt, {
      id, ts: new Date().toISOString(), request_id: `r${i}`, sql: 'SELECT 1', duration_ms: 1, row_count: 1, truncated: false,
      usage: { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, llm_calls: 1 }, attempt: 0,
    }, { requestId: `r${i}` });
  }
  await bus.flush();

  const first = auditProcess();
  const end = Date.now() + 60_000;
  while ((await count()).rows < 100 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  first.proc.kill('SIGKILL');
  await first.exited;
  const mid = await count();
  t.ok(mid.rows > 0 && mid.rows < N, `killed part way (${mid.rows} of ${N} written)`);

  const second = auditProcess();
  const end2 = Date.now() + 90_000;
  while ((await count()).rows < N && Date.now() < end2) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500)); // anything redelivered late would show now
  const after = await count();
  t.equal(after.rows, N, 'every event written');
  t.equal(after.distinct, N, 'each once');
  const missing = await cfgDb.pool.query('SELECT count(*)::int AS n FROM unnest($1::text[]) AS id WHERE id NOT IN (SELECT event_id FROM cortado_audit_log)', [ids]);
  t.equal(missing.rows[0].n, 0, 'the very events published');
  second.proc.kill('SIGTERM');
  t.equal(await second.exited, 0);
});
