/**
 * scheduler.job_timeout_seconds on a loaded database: an export whose connection is slow to open
 * (a TCP pass-through that delays every chunk the server sends, as a busy server or a long way
 * does) is stopped by its timeout, and says so — DB_TIMEOUT naming the timeout it ran under, which
 * the run's message turns into the setting. The client's own deadline used to start before
 * connecting: it fired during a slow connect, closed the connection, and the run said "the
 * database cannot be reached: the connection was closed".
 */
import t from 'tap';
import type { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { pgCursorPages } from '../../actors/executor/export-pg.js';
import { timeoutMessage } from '../../actors/scheduler/run.js';
import { testConfig } from '../helpers/config.js';
import { createTestDb } from '../helpers/pg.js';
import { startTcpCounter } from '../helpers/tcp-counter.js';

const db = await createTestDb('xtimeout');
// every reply of the server reaches Cortado 1.5 s late: connecting alone takes longer than the timeout and its grace
const slow = await startTcpCounter({ host: db.host, port: db.port }, { delayMs: 1_500 });
t.teardown(async () => {
  await slow.close();
  await db.drop();
});
const log = createLogger({ svc: 'test', level: 'silent' });

t.test('a slow connect: the export stops at its timeout and names it, never "cannot be reached"', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', db: { host: '127.0.0.1', port: slow.port, name: db.name, user: db.user }, extra: { scheduler: { job_timeout_seconds: 1 } } });
  let err: CortadoError | undefined;
  try {
    for await (const page of pgCursorPages(config, 'SELECT pg_sleep(30)', { timeoutMs: 300, pageRows: 10, log })) t.fail(`a page came back (${page.rows.length} rows)`);
  } catch (e) {
    err = e as CortadoError;
  }
  t.equal(err?.code, 'DB_TIMEOUT', `stopped by its timeout: ${err?.code} ${err?.message}`);
  t.equal(err?.details?.timeout_ms, 300, 'naming the timeout it ran under');
  t.match(timeoutMessage(config, err?.details?.timeout_ms as number), /ran longer than the time the run had left \(0\.3 s; scheduler\.job_timeout_seconds: 1 s\)/, 'which the run says');
});
