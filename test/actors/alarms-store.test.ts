/**
 * Where alarms are kept (store/alarms.ts): the JSON file at alarms.storage_path — atomic writes,
 * the lock between two real processes, a stale lock broken, a missing file reported, a corrupted
 * or unreadable file reported and never reset — and config_db's table on a real PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import { FileAlarms, postgresStorage, type AlarmRecord, type AlarmsRepository } from '../../store/index.js';
import { endWithProcess } from '../helpers/leftovers.js';
import { createTestDb } from '../helpers/pg.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(HERE, '../helpers/alarms-file-child.ts');
const dir = mkdtempSync(path.join(tmpdir(), 'cortado-alarms-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const lines: string[] = [];
const sink = new Writable({ write(chunk: Buffer, _e, cb) { lines.push(...chunk.toString().split('\n').filter(Boolean)); cb(); } });
const log = createLogger({ svc: 'test', level: 'debug', destination: sink });

function alarm(name: string, over: Partial<AlarmRecord> = {}): AlarmRecord {
  const at = new Date().toISOString();
  return {
    id: `a${Math.random().toString(36).slice(2, 12)}`, name, condition: { kind: 'forecast_above', threshold: 100 }, cron: '*/15 * * * *', timezone: 'UTC',
    recipients: ['ops@example.org'], enabled: true, state: 'ok', value: null, history: [], created_at: at, updated_at: at, updated_by: 'admin', ...over,
  };
}

async function refused(p: Promise<unknown>): Promise<CortadoError> {
  try {
    await p;
  } catch (err) {
    return err as CortadoError;
  }
  throw new Error('expected a refusal');
}

function child(args: string[]): { done: Promise<any>; pid: number; kill(): void; firstLine: Promise<any> } {
  const p = endWithProcess(spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: path.join(HERE, '../..') }));
  let out = '';
  let err = '';
  let first: (v: any) => void = () => undefined;
  const firstLine = new Promise<any>((r) => { first = r; });
  p.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    const nl = out.indexOf('\n');
    if (nl >= 0) first(JSON.parse(out.slice(0, nl)));
  });
  p.stderr.on('data', (c: Buffer) => { err += c.toString(); });
  const done = new Promise<any>((resolve, reject) => {
    p.on('exit', (code, signal) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop() as string));
      else if (signal) resolve({ signal });
      else reject(new Error(`child ${args[0]} exited ${code}: ${err}`));
    });
  });
  return { done, pid: p.pid as number, kill: () => p.kill('SIGKILL'), firstLine };
}

function suite(name: string, make: () => Promise<{ store: AlarmsRepository; done(): Promise<void> }>): void {
  t.test(`${name}: create, read, change, delete`, async (t) => {
    const { store, done } = await make();
    t.teardown(done);
    const a = await store.create(alarm('Budget'));
    t.same(await store.get(a.id), a, 'read back as written');
    t.equal((await refused(store.create(alarm('budget')))).code, 'CONFLICT', 'a name is unique regardless of case');
    const b = await store.create(alarm('Public datasets', { condition: { kind: 'public_dataset', threshold: 0 } }));
    t.same((await store.list()).map((x) => x.name), ['Budget', 'Public datasets'], 'oldest first');

    const same = await store.mutate(a.id, () => null);
    t.same(same, { record: a, changed: false }, 'null leaves it');
    const changed = await store.mutate(a.id, (r) => ({ ...r, state: 'firing', value: 123.5 }));
    t.equal(changed?.changed, true);
    t.equal((await store.get(a.id))?.state, 'firing');
    t.equal((await refused(store.mutate(b.id, (r) => ({ ...r, name: 'BUDGET' })))).code, 'CONFLICT', 'a rename onto a taken name');
    t.equal(await store.mutate('nope', (r) => r), undefined, 'no such alarm');

    // parallel read-modify-writes of one alarm in this process: none lost
    await Promise.all(Array.from({ length: 20 }, () => store.mutate(a.id, (r) => ({ ...r, value: (r.value ?? 0) + 1 }))));
    t.equal((await store.get(a.id))?.value, 143.5, 'twenty increments, none lost');

    t.equal(await store.delete(a.id), true);
    t.equal(await store.delete(a.id), false);
    t.same((await store.list()).map((x) => x.id), [b.id]);
  });
}

let fileN = 0;
suite('file', async () => ({ store: new FileAlarms(path.join(dir, `suite-${fileN++}`, 'alarms.json'), log), done: async () => undefined }));

const db = await createTestDb('alarms_store');
t.teardown(() => db.drop());
suite('postgresql', async () => {
  const s = postgresStorage({ host: db.host, port: db.port, database: db.name, user: db.user, password: '', log });
  await s.init();
  await db.pool.query('TRUNCATE cortado_alarms');
  return { store: s.alarms, done: () => s.close() };
});

t.test('file: what is on disk is one whole JSON document of version 1, written through a temporary file', async (t) => {
  const file = path.join(dir, 'disk', 'alarms.json');
  const store = new FileAlarms(file, log);
  t.equal(await store.state(), 'missing');
  const a = await store.create(alarm('On disk'));
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  t.equal(doc.version, 1);
  t.same(doc.alarms.map((x: AlarmRecord) => x.id), [a.id]);
  t.same(readdirSync(path.dirname(file)).sort(), ['alarms.json'], 'no temporary file nor lock left behind');
  t.equal(await store.state(), 'ok');
});

t.test('file: a missing file is reported (state and a warning), and made at the first change', async (t) => {
  lines.length = 0;
  const file = path.join(dir, 'missing', 'alarms.json');
  const store = new FileAlarms(file, log);
  t.same(await store.list(), []);
  t.equal(await store.state(), 'missing');
  t.ok(lines.some((l) => l.includes('"level":"warn"') && l.includes(file) && l.includes('not there')), 'a warning names the file');
  await store.create(alarm('First'));
  t.equal(await store.state(), 'ok');
});

t.test('file: a corrupted or unreadable file is reported on every call and never reset', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['not json', '{"version": 1, "alarms": [', /is not valid JSON/],
    ['wrong shape', '{"alarms": {}}', /does not hold/],
    ['other version', '{"version": 7, "alarms": []}', /version 7/],
    ['a bad record', JSON.stringify({ version: 1, alarms: [{ ...alarm('x'), state: 'exploded' }] }), /alarms\[0\]\/state/],
  ];
  for (const [what, text, why] of cases) {
    const file = path.join(dir, `corrupt-${what.replace(/ /g, '-')}.json`);
    writeFileSync(file, text);
    const store = new FileAlarms(file, log);
    for (const [call, p] of [
      ['list', () => store.list()], ['state', () => store.state()], ['create', () => store.create(alarm('New'))],
      ['mutate', () => store.mutate('x', (r) => r)], ['delete', () => store.delete('x')],
    ] as const) {
      const e = await refused(p());
      t.equal(e.code, 'INTERNAL', `${what}: ${call} refused`);
      t.match(e.message, why, `${what}: ${call} says what is wrong`);
      t.ok(e.message.includes(file), `${what}: ${call} names the file`);
      t.match(e.message, /never resets it/);
    }
    t.equal(readFileSync(file, 'utf8'), text, `${what}: the file is byte for byte as it was`);
    t.same(readdirSync(dir).filter((f) => f.startsWith(path.basename(file)) && f !== path.basename(file)), [], `${what}: no lock left behind`);
  }
  // unreadable: a directory where the file should be
  const asDir = path.join(dir, 'is-a-dir.json');
  mkdirSync(asDir);
  const e = await refused(new FileAlarms(asDir, log).list());
  t.match(e.message, new RegExp(`the alarms file ${asDir} cannot be read \\(EISDIR\\)`));
});

t.test('file: two processes changing one alarm at once lose nothing; a reader never sees half a file', async (t) => {
  const file = path.join(dir, 'contended', 'alarms.json');
  const store = new FileAlarms(file, log);
  // a big file makes a torn write likely to be seen if writes were not atomic
  const padding = Array.from({ length: 200 }, (_, i) => ({ at: new Date().toISOString(), state: 'ok' as const, value: i, message: 'x'.repeat(200) })).slice(0, 50);
  const a = await store.create(alarm('Contended', { value: 0, history: padding }));
  const N = 60;
  const [one, two, reader] = [child(['bump', file, a.id, String(N)]), child(['bump', file, a.id, String(N)]), child(['read', file, a.id, '400'])];
  const [r1, r2, rr] = await Promise.all([one.done, two.done, reader.done]);
  t.same([r1.done, r2.done], [N, N], 'each process made its changes');
  t.equal((await store.get(a.id))?.value, 2 * N, `${2 * N} increments from two processes, none lost`);
  t.equal(rr.torn, 0, `${rr.reads} reads while writing: never a partial file`);
  t.same(readdirSync(path.dirname(file)), ['alarms.json'], 'no lock nor temporary file left');
});

t.test('file: a lock whose process died is broken; a live holder makes others wait, then TIMEOUT naming it', async (t) => {
  const file = path.join(dir, 'stale', 'alarms.json');
  const store = new FileAlarms(file, log, { lockWaitMs: 400 });
  const a = await store.create(alarm('Stale'));

  const holder = child(['hold', file, a.id, '0']);
  t.same(await holder.firstLine, { locked: true }, 'the other process holds the lock');
  const e = await refused(store.mutate(a.id, (r) => ({ ...r, value: 1 })));
  t.equal(e.code, 'TIMEOUT', 'a live holder: this one waits, then gives up');
  t.match(e.message, new RegExp(`stayed locked .*pid ${holder.pid} on ${hostname()}`));

  holder.kill();
  await holder.done;
  lines.length = 0;
  const r = await store.mutate(a.id, (x) => ({ ...x, value: 2 }));
  t.equal(r?.record.value, 2, 'the dead holder\'s lock is broken');
  t.ok(lines.some((l) => l.includes('stale alarms lock was broken')), 'and said in the log');

  // a lock too old is stale whoever holds it
  writeFileSync(`${path.resolve(file)}.lock`, JSON.stringify({ pid: process.ppid, host: hostname(), nonce: 'n', at: '' }));
  const old = (Date.now() - 120_000) / 1000;
  utimesSync(`${path.resolve(file)}.lock`, old, old);
  t.equal((await store.mutate(a.id, (x) => ({ ...x, value: 3 })))?.record.value, 3, 'an old lock of a live process is broken too');
});
