/**
 * Per-scope engines of the executor (plugins.auth), with fake engines and a fake identity:
 * one engine per scope, the overlaid config it is built from, closing at expiry, when idle and
 * when the scope ends, and the max_workers semaphore.
 */
import t from 'tap';
import type { Config } from '../../config/schema.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import type { ScopeInfo } from '../../protocol/schemas/scope.js';
import { ScopeResolve } from '../../protocol/subjects.js';
import type { DbEngine } from '../../actors/executor/engines/engine.js';
import { ScopeRegistry, Workers } from '../../actors/executor/scopes.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { createSecretBox } from '../../actors/lib/crypto/secrets.js';
import { testConfig } from '../helpers/config.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const key = generateFernetKey();
const box = createSecretBox({ config_db: { encryption_key: key } });
const config = testConfig({
  natsUrl: 'nats://127.0.0.1:1',
  extra: { config_db: { encryption_key: key }, plugins: { auth: { enabled: true, max_workers: 3 } }, database: { postgresql: { max_connections: 10, min_connections: 2 } } },
});

interface FakeEngine extends DbEngine {
  closed: boolean;
  config: Config;
}

function fakeEngine(cfg: Config): FakeEngine {
  const e = {
    provider: 'postgresql' as const,
    dialect: 'postgresql' as const,
    closed: false,
    config: cfg,
    execute: async () => ({ columns: [], rows: [] }),
    introspect: async () => ({ default_schema: 'public', tables: [] }),
    ping: async () => undefined,
    canWrite: async () => ({ writable: false, reasons: [] }),
    close: async () => {
      e.closed = true;
    },
  };
  return e;
}

function setup(opts: { infos: Record<string, Partial<ScopeInfo>>; idleMs?: number; sweepMs?: number }) {
  const base = fakeEngine(config);
  const built: FakeEngine[] = [];
  const resolves: string[] = [];
  const bus = {
    request: async (def: unknown, input: { scope: string }) => {
      if (def !== ScopeResolve) throw new Error('unexpected request');
      resolves.push(input.scope);
      const info = opts.infos[input.scope];
      if (!info) throw new CortadoError('UNAUTHORIZED', 'the session or token of this request ended');
      return {
        scope: input.scope, kind: 'session', username: 'alice', expires_at: new Date(Date.now() + 60_000).toISOString(),
        provider: 'postgresql', db_config: {}, discovery: false, ...info,
      } as ScopeInfo;
    },
  } as unknown as ConstructorParameters<typeof ScopeRegistry>[0]['bus'];
  const registry = new ScopeRegistry({
    config, log, bus, box, base,
    createEngine: async (cfg) => {
      const e = fakeEngine(cfg);
      built.push(e);
      return e;
    },
    ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
    ...(opts.sweepMs !== undefined ? { sweepMs: opts.sweepMs } : {}),
  });
  return { base, built, resolves, registry };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alice = { db_config: box.sealSecretsIn({ provider: 'postgresql', host: 'db.internal', port: 5433, user: 'alice', password: 'pw-alice', database: 'shop', embedded: true }) };

t.test('no scope: the server engine; a scope: an engine of its own, from the overlaid config, shared by its requests', async (t) => {
  const { base, built, resolves, registry } = setup({ infos: { 's:a': alice } });
  t.teardown(() => registry.close());
  const plain = await registry.lease({ requestId: 'r0' });
  t.equal(plain.engine, base);
  t.equal(plain.scoped, false);

  const [one, two] = await Promise.all([registry.lease({ requestId: 'r1', scope: 's:a' }), registry.lease({ requestId: 'r2', scope: 's:a' })]);
  t.equal(built.length, 1, 'one engine for the scope');
  t.equal(one.engine, two.engine);
  t.equal(one.scoped, true);
  const pgc = built[0]!.config.database.postgresql;
  t.equal(pgc.user, 'alice');
  t.equal(pgc.password, 'pw-alice', 'the sealed password opened with the executor\'s own box');
  t.equal(pgc.host, 'db.internal');
  t.equal(pgc.port, 5433);
  t.equal(pgc.database, 'shop');
  t.equal(pgc.embedded, false, 'a scope never starts an embedded server');
  t.equal(pgc.min_connections, 0, 'nothing opened ahead');
  t.equal(pgc.max_connections, 3, 'capped by max_workers');
  t.equal(config.database.postgresql.user, testConfig({ natsUrl: 'nats://x' }).database.postgresql.user, 'the server config is untouched');
  t.ok(resolves.length <= 2, 'resolved once or twice (concurrent first uses), then cached');
  one.release();
  two.release();
  await registry.lease({ requestId: 'r3', scope: 's:a' }).then((l) => l.release());
  t.ok(resolves.length <= 2, 'cached');
});

t.test('an ended scope closes its engine, but only after the request using it is done', async (t) => {
  const { built, registry } = setup({ infos: { 's:a': alice } });
  t.teardown(() => registry.close());
  const lease = await registry.lease({ requestId: 'r1', scope: 's:a' });
  await registry.end('s:a', 'logout');
  t.equal(built[0]!.closed, false, 'still in use');
  t.equal(registry.size, 0, 'forgotten: the next request opens a new one');
  lease.release();
  await sleep(10);
  t.equal(built[0]!.closed, true, 'closed when released');
});

t.test('a scope expires: its engine closes at expires_at', async (t) => {
  const { built, registry } = setup({ infos: { 's:short': { ...alice, expires_at: new Date(Date.now() + 250).toISOString() } } });
  t.teardown(() => registry.close());
  const lease = await registry.lease({ requestId: 'r1', scope: 's:short' });
  lease.release();
  t.equal(registry.size, 1);
  await sleep(400);
  t.equal(built[0]!.closed, true, 'closed at expiry');
  t.equal(registry.size, 0);
});

t.test('an idle scope closes after idleMs', async (t) => {
  const { built, registry } = setup({ infos: { 's:a': alice }, idleMs: 60, sweepMs: 20 });
  t.teardown(() => registry.close());
  const busy = await registry.lease({ requestId: 'r1', scope: 's:a' });
  await sleep(150);
  t.equal(built[0]!.closed, false, 'not while in use');
  busy.release();
  await sleep(200);
  t.equal(built[0]!.closed, true, 'closed once idle');
});

t.test('a token with an empty db_config runs on the server engine; an unknown scope is refused', async (t) => {
  const { base, built, registry } = setup({ infos: { 't:empty': { kind: 'token', db_config: {} } } });
  t.teardown(() => registry.close());
  const lease = await registry.lease({ requestId: 'r1', scope: 't:empty' });
  t.equal(lease.engine, base);
  t.equal(built.length, 0);
  await t.rejects(registry.lease({ requestId: 'r2', scope: 's:gone' }), { code: 'UNAUTHORIZED' });
});

t.test('credentials sealed with another key: DB_UNAVAILABLE, never the key problem on the wire', async (t) => {
  const other = createSecretBox({ config_db: { encryption_key: generateFernetKey() } });
  const { registry } = setup({ infos: { 's:x': { db_config: other.sealSecretsIn({ provider: 'postgresql', user: 'x', password: 'y' }) } } });
  t.teardown(() => registry.close());
  await t.rejects(registry.lease({ requestId: 'r1', scope: 's:x' }), { code: 'DB_UNAVAILABLE', message: /cannot open the scope's credentials/ });
});

t.test('max_workers: a semaphore with a queue; the wait counts against the timeout', async (t) => {
  const w = new Workers(() => 1);
  const first = await w.acquire(1_000);
  t.equal(w.running, 1);
  let second: { release: () => void; waitedMs: number } | undefined;
  const waiting = w.acquire(2_000).then((s) => (second = s));
  await sleep(100);
  t.equal(second, undefined, 'the second waits');
  t.equal(w.waiting, 1);
  first.release();
  await waiting;
  t.ok(second!.waitedMs >= 90, `it waited (${second!.waitedMs} ms)`);
  await t.rejects(w.acquire(50), { code: 'DB_TIMEOUT', details: { reason: 'max_workers' } }, 'past the timeout: DB_TIMEOUT');
  t.equal(w.waiting, 0, 'the timed-out waiter left the queue');
  second!.release();
  second!.release();
  t.equal(w.running, 0, 'a double release counts once');
});
