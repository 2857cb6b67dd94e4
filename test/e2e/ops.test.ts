/**
 * The operations console's routes over a real stack (edge, identity, ops on a private NATS):
 * the admin's session is needed, each operation answers per project with the BigQuery
 * stand-in behind it (one project denied), bad parameters are 400s naming the parameter, an
 * operation outside allowed_operations is 403; and, beyond the spec, PostgreSQL as the target:
 * without pg_stat_statements the error says how to enable it, and on a private cluster started
 * with shared_preload_libraries=pg_stat_statements the statements and the active backends show.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';
import { call, startStack, type Stack } from '../helpers/stack.js';

process.env.METADATA_SERVER_DETECTION = 'none';

const ADMIN = { username: 'admin', password: 'ops-admin-pw' };
const TIB = 2 ** 40;
const nats = await startNats();
const db = await createTestDb('ops_e2e');
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: 'acme-prod' });
const dir = mkdtempSync(path.join(tmpdir(), 'ops-e2e-'));
const keyPath = path.join(dir, 'key.json');
writeFileSync(keyPath, JSON.stringify(fake.serviceAccount()));

const now = Date.now();
fake.ops.seed({
  project: 'acme-prod',
  jobs: [{ job_id: 'job_1', user_email: 'ana@acme.test', creation_time: new Date(now - 3_600_000).toISOString(), total_bytes_billed: 2 * TIB, total_slot_ms: 60_000, query: 'SELECT * FROM sales' }],
  datasets: [{ dataset_id: 'open', access: [{ role: 'READER', iamMember: 'allUsers' }] }],
});
fake.ops.seed({ project: 'acme-locked', region: 'EU', denied: 'Access Denied: Project acme-locked: User does not have bigquery.jobs.create permission in project acme-locked.' });

const roles = { edge: true, actors: ['identity', 'ops'] as Array<'identity' | 'ops'> };
const stacks: Stack[] = [];
async function stackWith(extra: Record<string, unknown>): Promise<Stack> {
  const s = await startStack(testConfig({ natsUrl: nats.url, extra: { admin: { enabled: true, ...ADMIN }, ...extra } }), roles);
  stacks.push(s);
  return s;
}
async function stopStacks(): Promise<void> {
  while (stacks.length) await stacks.pop()!.stop();
}

t.teardown(async () => {
  await stopStacks();
  await fake.close();
  await db.drop();
  await nats.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function adminCookie(base: string): Promise<string> {
  const r = await call(`${base}/admin/login`, { body: ADMIN });
  if (r.status !== 200) throw new Error(`admin login: ${r.status} ${r.text}`);
  return (r.headers.get('set-cookie') ?? '').split(';')[0]!;
}

t.test('BigQuery projects: the admin\'s routes, per-project results and errors, parameters checked', async (t) => {
  const stack = await stackWith({
    database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } },
    ops_agent: {
      enabled: true,
      price_per_tb_usd: 6.25,
      config: {
        projects: [{ project_id: 'acme-prod', region: 'US', credentials_path: keyPath }, { project_id: 'acme-locked', region: 'EU', credentials_path: keyPath }],
        allowed_operations: ['get_expensive_queries', 'find_public_datasets'],
      },
    },
  });
  const anon = await call(`${stack.url}/api/ops/status`);
  t.equal(anon.status, 401, 'a stranger is refused');
  t.equal((await call(`${stack.url}/api/ops/get_expensive_queries`)).status, 401);
  const cookie = await adminCookie(stack.url);
  const get = (p: string) => call(`${stack.url}${p}`, { headers: { cookie } });

  const status = await get('/api/ops/status');
  t.equal(status.status, 200, status.text);
  t.same(status.body.allowed_operations, ['get_expensive_queries', 'find_public_datasets']);
  t.same(status.body.targets.map((x: { label: string }) => x.label), ['acme-prod/US', 'acme-locked/EU']);

  const exp = await get('/api/ops/get_expensive_queries?window_days=3&limit=5');
  t.equal(exp.status, 200, exp.text);
  const [prod, locked] = exp.body.projects;
  t.same(prod.result.by_bytes.map((q: { job_id: string; cost_usd: number }) => [q.job_id, q.cost_usd]), [['job_1', 12.5]], '2 TiB at $6.25');
  t.equal(prod.result.window_days, 3);
  t.equal(locked.error.code, 'FORBIDDEN');
  t.match(locked.error.message, /acme-locked/);
  t.equal(exp.body.insights.status, 'off');

  const pub = await get('/api/ops/find_public_datasets?project_id=acme-prod');
  t.equal(pub.status, 200);
  t.same(pub.body.projects[0].result.datasets, [{ dataset_id: 'open', location: 'US', entries: [{ role: 'READER', member: 'allUsers' }] }]);

  const refused = await get('/api/ops/check_slot_saturation');
  t.equal(refused.status, 403);
  t.equal(refused.body.error.code, 'FORBIDDEN');
  t.match(refused.body.error.message, /check_slot_saturation is not in ops_agent\.config\.allowed_operations/);

  for (const [q, code, status, what] of [
    ['/api/ops/get_expensive_queries?window_days=0', 'VALIDATION_FAILED', 400, /window_days: an integer from 1 to 180/],
    ['/api/ops/get_expensive_queries?limit=abc', 'VALIDATION_FAILED', 400, /limit/],
    ['/api/ops/get_expensive_queries?window=3', 'VALIDATION_FAILED', 400, /unknown query parameter window/],
    ['/api/ops/get_expensive_queries?limit=1&limit=2', 'VALIDATION_FAILED', 400, /repeated/],
    ['/api/ops/get_expensive_queries?insights=maybe', 'VALIDATION_FAILED', 400, /insights: true or false/],
    ['/api/ops/drop_tables', 'NOT_FOUND', 404, /no operation drop_tables/],
    ['/api/ops/get_expensive_queries?project_id=other', 'NOT_FOUND', 404, /no configured project/],
  ] as const) {
    const r = await get(q);
    t.equal(r.status, status, `${q}: ${r.text}`);
    t.equal(r.body.error.code, code);
    t.match(r.body.error.message, what);
  }
  const page = await call(`${stack.url}/ops`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-security-policy'), /script-src 'self'/);
  t.match(page.text, /<section id="alarms"><\/section>/);
  t.match(page.text, /src="\/static\/ops-alarms\.js"/);
  await stopStacks();
});

t.test('the console off: status says why, operations are 403', async (t) => {
  const stack = await stackWith({ database: { provider: 'bigquery', bigquery: { project_id: 'acme-prod', base_url: fake.url } } });
  const cookie = await adminCookie(stack.url);
  const status = await call(`${stack.url}/api/ops/status`, { headers: { cookie } });
  t.equal(status.body.enabled, false);
  t.match(status.body.reason, /ops_agent\.enabled: false/);
  const r = await call(`${stack.url}/api/ops/forecast_monthly_costs`, { headers: { cookie } });
  t.equal(r.status, 403);
  t.match(r.body.error.message, /set ops_agent\.enabled to true/);
  await stopStacks();
});

t.test('PostgreSQL without pg_stat_statements: the error says how to enable it; saturation is one point', async (t) => {
  const stack = await stackWith({
    database: { provider: 'postgresql', postgresql: { host: db.host, port: db.port, database: db.name, user: db.user } },
    ops_agent: { enabled: true },
  });
  const cookie = await adminCookie(stack.url);
  const exp = await call(`${stack.url}/api/ops/get_expensive_queries`, { headers: { cookie } });
  t.equal(exp.status, 200, exp.text);
  t.same(exp.body.projects[0].target, { engine: 'postgresql', label: `postgresql/${db.name}` });
  t.equal(exp.body.projects[0].error.code, 'NOT_FOUND');
  t.match(exp.body.projects[0].error.message, /shared_preload_libraries.*CREATE EXTENSION pg_stat_statements/);

  const sat = await call(`${stack.url}/api/ops/check_slot_saturation`, { headers: { cookie } });
  const s = sat.body.projects[0].result;
  t.equal(s.points.length, 1);
  t.ok(s.capacity >= 1, 'max_connections');
  t.ok(s.points[0].avg_slots >= 1, 'at least the sampling backend is active');
  t.match(s.note, /sampled now/);

  const fc = await call(`${stack.url}/api/ops/forecast_monthly_costs`, { headers: { cookie } });
  t.match(fc.body.projects[0].error.message, /forecast_monthly_costs is not available on postgresql/);
  await stopStacks();
});

t.test('PostgreSQL: a saturation alarm is refused when saved (one sample could never hold for minutes); others are kept', async (t) => {
  const stack = await startStack(testConfig({
    natsUrl: nats.url,
    extra: {
      admin: { enabled: true, ...ADMIN },
      database: { provider: 'postgresql', postgresql: { host: db.host, port: db.port, database: db.name, user: db.user } },
      ops_agent: { enabled: true },
      alarms: { enabled: true, storage_path: path.join(dir, 'pg-alarms.json'), default_recipients: ['oncall@acme.test'] },
    },
  }), { edge: true, actors: ['identity', 'ops', 'alarms'] });
  stacks.push(stack);
  const login = await call(`${stack.url}/admin/login`, { body: ADMIN });
  const headers = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0]!, 'x-csrf-token': login.body.csrf_token as string };
  const sat = await call(`${stack.url}/api/alarms`, { headers, body: { name: 'Backends', condition: { kind: 'saturation_above', threshold: 0.9, minutes: 15 } } });
  t.equal(sat.status, 400, sat.text);
  t.equal(sat.body.error.code, 'VALIDATION_FAILED');
  t.match(sat.body.error.message, new RegExp(`saturation_above needs slot use over time, which only BigQuery targets have \\(postgresql/${db.name}: one sample of the active backends now, no history\\): it could never hold for 15 min there`));
  const tested = await call(`${stack.url}/api/alarms/test`, { headers, body: { condition: { kind: 'saturation_above', threshold: 0.01, minutes: 1 } } });
  t.equal(tested.status, 200, tested.text);
  t.same([tested.body.fires, tested.body.would], [false, 'nothing'], 'a draft measured on one sample fires nothing');
  t.match(tested.body.error, /one sample, no history/);
  const list = await call(`${stack.url}/api/alarms`, { headers });
  t.same(list.body.alarms, [], 'nothing saved');
  await stopStacks();
});

/** A private PostgreSQL cluster with pg_stat_statements preloaded (initdb as the postgres user). */
async function privateCluster(): Promise<{ port: number; stop(): void } | undefined> {
  const bin = readdirSync('/usr/lib/postgresql').sort().map((v) => `/usr/lib/postgresql/${v}/bin`).filter((b) => existsSync(`${b}/initdb`)).at(-1);
  if (!bin) return undefined;
  const root = mkdtempSync(path.join(tmpdir(), 'ops-pg-'));
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const asPostgres = (cmd: string, args: string[]) => (process.getuid?.() === 0 ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe' }) : execFileSync(cmd, args, { stdio: 'pipe' }));
  if (process.getuid?.() === 0) {
    const ids = execFileSync('id', ['-u', 'postgres']).toString().trim();
    chownSync(root, Number(ids), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  }
  asPostgres(`${bin}/initdb`, ['-D', `${root}/data`, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  asPostgres(`${bin}/pg_ctl`, ['-D', `${root}/data`, '-l', `${root}/log`, '-w', '-o', `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_preload_libraries=pg_stat_statements`, 'start']);
  return {
    port,
    stop() {
      try {
        asPostgres(`${bin}/pg_ctl`, ['-D', `${root}/data`, '-m', 'immediate', 'stop']);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

t.test('PostgreSQL with pg_stat_statements (a private cluster): the statements by blocks and by time', async (t) => {
  const cluster = await privateCluster();
  if (!cluster) {
    t.fail('no PostgreSQL server binaries to start a private cluster');
    return;
  }
  t.teardown(() => cluster.stop());
  const c = new pg.Client({ host: '127.0.0.1', port: cluster.port, user: 'postgres', database: 'postgres' });
  await c.connect();
  await c.query('CREATE EXTENSION pg_stat_statements');
  await c.query('CREATE TABLE big AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 20000) g');
  for (let i = 0; i < 3; i++) await c.query('SELECT count(*) FROM big WHERE v LIKE $1', ['%ab%']);
  await c.end();

  const stack = await stackWith({
    database: { provider: 'postgresql', postgresql: { host: '127.0.0.1', port: cluster.port, database: 'postgres', user: 'postgres' } },
    ops_agent: { enabled: true },
  });
  const cookie = await adminCookie(stack.url);
  const r = await call(`${stack.url}/api/ops/get_expensive_queries?limit=50`, { headers: { cookie } });
  t.equal(r.status, 200, r.text);
  const result = r.body.projects[0].result;
  t.ok(result, JSON.stringify(r.body.projects[0].error));
  const scan = result.by_slot.find((q: { query: string }) => q.query.includes('FROM big WHERE v LIKE'));
  t.ok(scan, 'the scan is listed by time');
  t.equal(scan.calls, 3, 'pg_stat_statements aggregates its calls');
  t.equal(scan.user, 'postgres');
  t.equal(scan.cost_usd, null, 'nothing is billed');
  t.ok(scan.bytes_billed >= 8192, 'blocks touched × block size');
  t.ok(result.by_bytes.some((q: { query: string }) => q.query.includes('FROM big')), 'and by blocks');
  t.match(result.note, /since its last reset \(\d{4}-/);
  await stopStacks();
});
