/**
 * Retention through the scheduler actor (actors/scheduler/retention.ts) with scheduler.enabled
 * false, the default: no leader runs, yet Run Now's history is still kept to
 * keep_history_days and max_executions_per_schedule, and a run left `queued` a day after it
 * was recorded (a stranded tick) is marked failed with a message that says so, then pruned like
 * any other. The actor runs on a real NATS (JetStream) with config_db on a real PostgreSQL; the
 * clock the actor reads is moved forward by the test (SchedulerOptions.now).
 */
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { startScheduler } from '../../actors/scheduler/actor.js';
import { RETENTION_MS, STALE_QUEUED_MS } from '../../actors/scheduler/retention.js';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { openStorage } from '../../store/index.js';
import type { Execution, NewSchedule } from '../../store/schedules.js';
import { testConfig, setConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { until } from '../helpers/processes.js';

const HOUR = 3_600_000;
const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const cfgDb = await createTestDb('schedret');
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
    scheduler: { enabled: false, keep_history_days: 30, max_executions_per_schedule: 3 },
  },
});
const store = await openStorage(config, log);
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'retention-test', log });
let offset = 0;
const clock = (): number => Date.now() + offset;

t.teardown(async () => {
  await store.close();
  await bus.close();
  await nats.stop();
  await cfgDb.drop();
});

const schedule = (name: string): NewSchedule => ({
  name, question: 'q', tables: [], cron: '0 8 * * *', own_timezone: null, email_recipients: ['a@example.org'], format: 'csv', subject: '', sql: 'SELECT 1',
  explanation: '', enabled: true, missed: 'skip', owner_user: 'admin',
});
const ok = { success: true, email_sent: true, email_error: null, error_message: null, rows_returned: 1, duration_ms: 3 };

async function finished(scheduleId: string, at: number, trigger: Execution['trigger'] = 'manual'): Promise<Execution> {
  const e = await store.executions.enqueue({ schedule_id: scheduleId, schedule_name: 'x', execution_time: new Date(at).toISOString(), trigger });
  await store.executions.markDone(e!.id, ok);
  return e!;
}
const ids = async (scheduleId: string) => (await store.executions.list(scheduleId)).map((e) => e.id);

t.test('with scheduler.enabled false, every scheduler process prunes on its own timer', async (t) => {
  const now = Date.now();
  // Run Now history beyond max_executions_per_schedule (3)
  const a = await store.schedules.create(schedule('manual_only'));
  const runs: Execution[] = [];
  for (let i = 5; i >= 1; i--) runs.push(await finished(a.id, now - i * HOUR));
  // a run older than keep_history_days (30)
  const b = await store.schedules.create(schedule('old'));
  const old = await finished(b.id, now - 40 * 24 * HOUR, 'cron');
  const recent = await finished(b.id, now - HOUR, 'cron');
  // a tick stranded in `queued` two days ago (its leader stopped before queueing it; missed: skip moved past it), and one just queued
  const c = await store.schedules.create(schedule('stranded'));
  const stranded = await store.executions.enqueue({ schedule_id: c.id, schedule_name: 'stranded', execution_time: new Date(now - 2 * 24 * HOUR).toISOString(), trigger: 'cron' });
  await cfgDb.pool.query("UPDATE cortado_schedule_executions SET created_at = now() - interval '2 days' WHERE id = $1", [stranded!.id]);
  const waiting = await store.executions.enqueue({ schedule_id: c.id, schedule_name: 'stranded', execution_time: new Date(now).toISOString(), trigger: 'manual' });

  const actor = await startScheduler({ bus, config, log }, { now: clock });
  t.teardown(() => actor.stop());

  await until('the first pass', async () => (await ids(a.id)).length === 3, 20_000);
  t.same(await ids(a.id), runs.slice(2).reverse().map((e) => e.id), 'the newest three Run Now records are kept');
  await until('the old run pruned', async () => (await ids(b.id)).length === 1, 5_000);
  t.same(await ids(b.id), [recent.id], 'the run older than keep_history_days is deleted');
  t.equal(await store.executions.get(old.id), undefined);
  const failed = await store.executions.get(stranded!.id);
  t.match(failed, { status: 'done', success: false, error_message: /never started: it was still waiting in the queue a day after it was recorded/ }, 'the stranded tick is failed, saying why');
  t.equal((await store.executions.get(waiting!.id))?.status, 'queued', 'a run queued a moment ago is left to its worker');

  // a runtime change of the limit applies at the next pass (by the scheduler's clock), and a day later the waiting run is stale too
  setConfig(config, 'scheduler.max_executions_per_schedule', 1);
  offset = STALE_QUEUED_MS + RETENTION_MS;
  await until('the next pass', async () => (await ids(a.id)).length === 1, 20_000);
  t.same(await ids(a.id), [runs[4]!.id], 'one kept after max_executions_per_schedule became 1');
  const late = await store.executions.get(waiting!.id);
  t.match(late, { status: 'done', success: false, error_message: /never started/ }, 'a day later the waiting run is failed');
  t.same(await ids(c.id), [waiting!.id], 'the failed stranded runs are pruned like any other');
});
