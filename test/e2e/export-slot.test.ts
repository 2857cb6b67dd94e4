/**
 * An export on a plugins.auth scope's own connection takes one of plugins.auth.max_workers'
 * slots for as long as it reads, as a query does (actors/executor/export.ts, handle.ts inSlot).
 * A real stack on a real PostgreSQL, max_workers 1, two sign-ins (two scopes, each with a pool
 * of its own): while the first one's export waits on a table the test keeps locked, the second
 * one's export of `SELECT 1` waits for the slot (the executor's cortado_db_workers_waiting says
 * so) and does not run; once the lock goes, both finish.
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, dropRoles } from '../helpers/pg.js';
import { call, startStack } from '../helpers/stack.js';
import { metricsText } from '../../runtime/metrics.js';

const workersWaiting = (m: { text: string }): number => Number(/^cortado_db_workers_waiting (\S+)$/m.exec(m.text)?.[1] ?? 0);

const role = `xslot_${process.pid}_${Date.now().toString(36)}`;
const PASSWORD = 'xslot-pw-1';
const nats = await startNats();
const db = await createTestDb('xslot');
await db.pool.query(`
  CREATE TABLE blocker (id int); INSERT INTO blocker VALUES (1);
  CREATE ROLE ${role} LOGIN PASSWORD '${PASSWORD}';
  GRANT CONNECT ON DATABASE ${db.name} TO ${role};
  GRANT USAGE ON SCHEMA public TO ${role};
  GRANT SELECT ON blocker TO ${role};
`);
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  db: { host: db.host, port: db.port, name: db.name, user: db.user },
  extra: { config_db: { encryption_key: generateFernetKey() }, plugins: { auth: { enabled: true, max_workers: 1 } }, query: { timeout: 60 } },
}));
t.teardown(async () => {
  await stack.stop();
  await db.drop();
  await dropRoles(role);
  await nats.stop();
});

async function signIn(): Promise<Record<string, string>> {
  const r = await call(`${stack.url}/auth/login`, { body: { username: role, password: PASSWORD } });
  if (r.status !== 200) throw new Error(`login: ${r.status} ${r.text}`);
  return { 'x-session-id': r.body.session_id as string };
}

t.test('a scope\'s export holds a max_workers slot while it reads', async (t) => {
  const first = await signIn();
  const second = await signIn();
  t.not(first['x-session-id'], second['x-session-id'], 'two scopes');
  const exportAs = (h: Record<string, string>, sql: string) => call(`${stack.url}/api/export`, { body: { sql, format: 'csv', title: 'slot' }, headers: h });
  // warm each scope's engine up (its catalog, its pool), one after the other
  t.equal((await exportAs(first, 'SELECT 1 AS one')).status, 200);
  t.equal((await exportAs(second, 'SELECT 1 AS one')).status, 200);

  const lock = await db.pool.connect();
  await lock.query('BEGIN; LOCK TABLE blocker IN ACCESS EXCLUSIVE MODE');
  let firstDone = false;
  let secondDone = false;
  const a = exportAs(first, 'SELECT id FROM blocker').finally(() => { firstDone = true; });
  // the first export is on the database, waiting for the lock (its slot taken)
  for (let i = 0; i < 200; i++) {
    const r = await db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'`, [role]);
    if (r.rows[0].n > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const b = exportAs(second, 'SELECT 1 AS one').finally(() => { secondDone = true; });
  // the second one is queued for the slot: the executor says so (cortado_db_workers_waiting; the
  // stack runs in this process), no fixed wait
  let waiting = 0;
  for (let i = 0; i < 300 && waiting < 1 && !secondDone; i++) {
    waiting = workersWaiting(await metricsText());
    if (waiting < 1) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(waiting, 1, 'the second export waits for a max_workers slot');
  t.notOk(firstDone, 'the first export waits for the lock');
  t.notOk(secondDone, 'the second scope\'s export waits for the one slot (its own pool is free)');
  await lock.query('ROLLBACK');
  lock.release();
  const [ra, rb] = await Promise.all([a, b]);
  t.equal(ra.status, 200, ra.text.slice(0, 200));
  t.equal(rb.status, 200, rb.text.slice(0, 200));
  t.match(ra.text, /id[\s\S]*1/, 'the first export has its row');
  t.equal(workersWaiting(await metricsText()), 0, 'none waits once both are done');
});
