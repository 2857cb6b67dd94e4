/**
 * The alarms leader lease (actors/alarms/evaluator.ts) over a real NATS with JetStream: two
 * alarms processes (test/helpers/alarms-lease-child.ts), sharing one alarms file and
 * measuring through the real ops actor over the BigQuery stand-in. Only the lease holder
 * evaluates; when it is SIGKILLed (it never gives the lease back), the other takes over once
 * the lease expires and evaluates the next tick; each tick is evaluated once. E-mails reach a
 * real SMTP test server and issues the Jira REST v3 stand-in: exactly one each per firing, one
 * e-mail and one comment on resolve.
 *
 * The clock the ticks are read from is the test's (a file the processes read); the lease runs on real
 * time (its KV entry's TTL), so a takeover takes up to LEASE_TTL_MS + a renewal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { AlarmCreate, AlarmGet } from '../../protocol/subjects.js';
import { ROOT } from '../../config/load.js';
import { LEASE_TTL_MS } from '../../actors/lib/jobs/lease.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startFakeJira } from '../helpers/fake-jira.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { startNats } from '../helpers/nats.js';
import { startSmtp } from '../helpers/smtp.js';
import { createTestDb } from '../helpers/pg.js';
import { until } from '../helpers/processes.js';
import { startStack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const nats = await startNats();
const db = await createTestDb('alarms_lease');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const smtp = await startSmtp({ tls: 'none' });
const jira = await startFakeJira({ email: 'ops-bot@acme.test', apiToken: 'jira-lease-Tt31', projectKey: 'DATA' });
const dir = mkdtempSync(path.join(tmpdir(), 'alarms-lease-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));
const alarmsFile = path.join(dir, 'alarms.json');
fake.ops.seed({ project: 'acme-prod', datasets: [{ dataset_id: 'sales', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }] }] });

const extra = {
  database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
  ops_agent: { enabled: true, config: { projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }], allowed_operations: ['find_public_datasets'] } },
  alarms: { enabled: true, storage_path: alarmsFile, default_recipients: ['oncall@acme.test'] },
  email: { enabled: true, smtp: { host: smtp.host, port: smtp.port, from_email: 'cortado@acme.test', use_tls: false, use_ssl: false } },
  jira: { enabled: true, url: jira.url, email: 'ops-bot@acme.test', api_token: 'jira-lease-Tt31', project_key: 'DATA' },
};
const config = testConfig({ natsUrl: nats.url, extra });
// the mailer of the stack sends the children's e-mails to the SMTP test server
const stack = await startStack(config, { edge: false, actors: ['ops', 'mailer'] });

const clockFile = path.join(dir, 'clock');
const setClock = (iso: string): void => writeFileSync(clockFile, String(Date.parse(iso)));
setClock('2026-07-01T09:00:30Z');
const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), '../helpers/alarms-lease-child.ts');

/** one alarms process: its log lines, parsed */
interface Member { name: string; child: ChildProcess; lines: Array<Record<string, any>> }
function member(name: string): Member {
  const child = endWithProcess(spawn(process.execPath, ['--import', 'tsx', CHILD, nats.url, JSON.stringify(extra), clockFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
  const m: Member = { name, child, lines: [] };
  let rest = '';
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (rest + d.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const l of parts.filter(Boolean)) {
      try {
        m.lines.push(JSON.parse(l));
      } catch {
        m.lines.push({ msg: l });
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => m.lines.push({ stderr: d.toString() }));
  return m;
}
const leads = (m: Member): boolean => m.lines.some((l) => l.msg === 'alarms leader: this process evaluates the alarms');
const ready = (m: Member): boolean => m.lines.some((l) => l.msg === 'alarms ready');
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'lease-client', log: createLogger({ svc: 'client', level: 'silent' }) });
const a = member('alarms-a');
await until('a to hold the lease', () => leads(a), 30_000);
const b = member('alarms-b');
await until('b to start', () => ready(b), 30_000);
const members = [a, b];

t.teardown(async () => {
  for (const m of members) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGTERM');
  await Promise.all(members.map((m) => (m.child.exitCode === null && m.child.signalCode === null ? new Promise((r) => m.child.once('exit', r)) : undefined)));
  await client.close();
  await stack.stop();
  await fake.close();
  await smtp.close();
  await jira.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** the ticks a member evaluated, from its log (every evaluation logs its tick) */
const ticksOf = (m: Member) => m.lines.filter((l) => typeof l.tick === 'string' && l.alarm !== undefined).map((l) => l.tick as string);
const listed = () => fake.calls.filter((c) => c === 'GET /bigquery/v2/projects/acme-prod/datasets').length;
const through = (id: string) => (JSON.parse(readFileSync(alarmsFile, 'utf8')).alarms as Array<{ id: string; evaluated_through?: string }>).find((x) => x.id === id)?.evaluated_through;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('the lease holder evaluates; killed, the other takes over at the next tick; each tick once', async (t) => {
  t.ok(leads(a), 'the first process holds the lease');
  await pause(2_500); // b tries the lease at least once: it stays a's
  t.notOk(leads(b), 'the second waits');

  const created = await client.request(AlarmCreate, { name: 'Public datasets', condition: { kind: 'public_dataset', threshold: 0 }, cron: '* * * * *', by: 'admin' }, { requestId: 'lease-1' });
  const id = created.id;
  const listed0 = listed();

  setClock('2026-07-01T09:01:05Z'); // tick 09:01 is due
  await until('tick 09:01 evaluated', () => through(id) === '2026-07-01T09:01:00.000Z' && ticksOf(a).length === 1, 10_000);
  await pause(2_500); // several passes of both evaluators
  t.same(ticksOf(a), ['2026-07-01T09:01:00.000Z'], 'the leader evaluated the tick');
  t.same(ticksOf(b), [], 'the other did not');
  t.equal(listed() - listed0, 1, 'measured once');

  // a is killed: it never gives the lease back; the lease's TTL ends it
  const killedAt = Date.now();
  a.child.kill('SIGKILL');
  await new Promise((r) => a.child.once('exit', r));
  fake.ops.seed({ project: 'acme-prod', datasets: [{ dataset_id: 'sales', access: [{ role: 'READER', iamMember: 'allUsers' }] }] });
  setClock('2026-07-01T09:02:05Z'); // tick 09:02 is due
  await until('b to take the lease over', () => leads(b), LEASE_TTL_MS + 8_000);
  t.ok(Date.now() - killedAt >= LEASE_TTL_MS - 3_000, 'not before the dead holder\'s lease ran out');
  await until('tick 09:02 evaluated', () => ticksOf(b).length === 1, 10_000);
  await pause(2_500);
  t.same(ticksOf(b), ['2026-07-01T09:02:00.000Z'], 'the new leader evaluated the next tick');
  t.same(ticksOf(a), ['2026-07-01T09:01:00.000Z'], 'the dead one nothing more');
  t.equal(listed() - listed0, 2, 'two ticks, two measurements');

  const got = await client.request(AlarmGet, { id }, { requestId: 'lease-2' });
  t.equal(got.state, 'firing', 'the dataset made public fired at 09:02');
  t.same(got.history.map((h) => [h.state, h.at, h.value]), [['firing', '2026-07-01T09:02:05.000Z', 1], ['firing', '2026-07-01T09:02:05.000Z', 1]], 'one state change and its issue, recorded once');
  t.equal(got.issue_key, 'DATA-1');
  const [fired] = await smtp.waitFor(1);
  t.equal(fired?.parsed.subject, '[Cortado alarm] FIRING: Public datasets (1 public dataset)');
  t.equal(jira.issues.length, 1, 'one issue in the tracker');

  // resolved at the next tick: one e-mail more, one comment, no new issue
  fake.ops.seed({ project: 'acme-prod', datasets: [{ dataset_id: 'sales', access: [{ role: 'OWNER', userByEmail: 'ana@acme.test' }] }] });
  setClock('2026-07-01T09:03:05Z');
  await until('tick 09:03 evaluated', () => ticksOf(b).length === 2, 10_000);
  const mails = await smtp.waitFor(2);
  await pause(2_500); // more passes of the survivor: nothing more is sent
  t.same(mails.map((m) => m.parsed.subject), ['[Cortado alarm] FIRING: Public datasets (1 public dataset)', '[Cortado alarm] RESOLVED: Public datasets (0 public datasets)']);
  t.equal(smtp.received.length, 2, 'exactly one e-mail per change, across both processes');
  t.same([jira.issues.length, jira.issues[0]?.comments.length], [1, 1], 'exactly one issue and one resolve comment');
  t.equal((await client.request(AlarmGet, { id }, { requestId: 'lease-3' })).state, 'ok');
});
