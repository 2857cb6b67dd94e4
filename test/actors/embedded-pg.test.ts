/**
 * The embedded demo database: PGlite in this process, filled with the generated coffee-chain
 * data on first start, served to real `pg` clients on a unix socket. Checks what a user of
 * `npm start` relies on: the same data everywhere, consistent money, several connections at
 * once, no writes, fast restarts, one process per directory.
 */
import { spawn } from 'node:child_process';
import { link, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { pino } from 'pino';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import { DEMO_META_TABLE, generateDemoData, countsOf } from '../../actors/executor/embedded/demo-data.js';
import { startEmbeddedPostgres } from '../../actors/executor/embedded/pglite.js';
import { endWithProcess } from '../helpers/leftovers.js';

type Embedded = Awaited<ReturnType<typeof startEmbeddedPostgres>>;

/** What the fixed seed and end date produce; a change here means every install's data changed. */
const PINNED = { orders: 40_877, order_lines: 72_624, customers: 2_000, sum_total: '437717.85' };

const root = await mkdtemp(path.join(os.tmpdir(), 'cortado-embedded-'));
t.teardown(() => rm(root, { recursive: true, force: true }));

/** A logger whose lines the test can read. */
function capturingLogger(): { log: Logger; messages: () => Array<Record<string, unknown>> } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { log: pino<never>({ level: 'info' }, sink), messages: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function generatedLines(messages: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return messages.filter((m) => m.msg === 'embedded database: demo data generated');
}

async function connect(db: Embedded): Promise<pg.Client> {
  const client = new pg.Client({ host: db.host, port: db.port, database: db.database, user: db.user });
  await client.connect();
  return client;
}

async function one<R extends pg.QueryResultRow>(client: pg.Client, sql: string, values: unknown[] = []): Promise<R> {
  const { rows } = await client.query<R>(sql, values);
  if (!rows[0]) throw new Error(`no row from: ${sql}`);
  return rows[0];
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  return undefined;
}

t.test('the generator is deterministic', async (t) => {
  const a = generateDemoData();
  const b = generateDemoData();
  t.same(countsOf(a), countsOf(b));
  t.equal(JSON.stringify(a), JSON.stringify(b), 'two runs give the same rows');
  t.equal(a.orders.length, PINNED.orders);
  const other = generateDemoData({ seed: 7 });
  t.not(other.orders.length, a.orders.length, 'another seed gives other data');
});

const dirA = path.join(root, 'a');
let a: Embedded | undefined;
let firstStartMs = 0;

t.test('the first start generates the data and serves it on a socket in the directory', async (t) => {
  const { log, messages } = capturingLogger();
  const t0 = performance.now();
  a = await startEmbeddedPostgres({ dir: dirA, maxConnections: 4, log });
  firstStartMs = performance.now() - t0;
  t.equal(a.host, dirA);
  t.equal(a.port, 5432);
  t.ok((await stat(path.join(dirA, '.s.PGSQL.5432'))).isSocket(), 'the socket is <dir>/.s.PGSQL.5432');
  const generated = generatedLines(messages());
  t.equal(generated.length, 1, 'one info line for the generation');
  t.match(generated[0], { level: 30, reason: 'missing', counts: { stores: 12, products: 30, customers: PINNED.customers, orders: PINNED.orders } });
  t.comment(`first start ${Math.round(firstStartMs)} ms (generation and load ${String(generated[0]?.ms)} ms)`);
});

t.test('row counts and totals are the pinned ones', async (t) => {
  if (!a) return t.fail('not started');
  const c = await connect(a);
  t.teardown(() => c.end());
  const counts = await one<Record<string, number>>(
    c,
    `SELECT (SELECT count(*)::int FROM stores) AS stores, (SELECT count(*)::int FROM products) AS products,
            (SELECT count(*)::int FROM customers) AS customers, (SELECT count(*)::int FROM orders) AS orders,
            (SELECT count(*)::int FROM order_lines) AS order_lines`,
  );
  t.equal(counts.stores, 12);
  t.equal(counts.products, 30);
  t.equal(counts.customers, PINNED.customers);
  t.ok(counts.orders! > 35_000 && counts.orders! < 45_000, `about 40k orders (${counts.orders})`);
  t.equal(counts.orders, PINNED.orders);
  t.equal(counts.order_lines, PINNED.order_lines);
  t.equal((await one<{ s: string }>(c, 'SELECT sum(total)::text AS s FROM orders')).s, PINNED.sum_total);

  const span = await one<{ first: string; last: string }>(c, `SELECT min(ordered_at)::date::text AS first, max(ordered_at)::date::text AS last FROM orders`);
  t.same(span, { first: '2024-11-01', last: '2026-10-31' }, 'two years up to the fixed end date');
  const channels = await c.query<{ channel: string }>('SELECT DISTINCT channel FROM orders ORDER BY 1');
  t.same(channels.rows.map((r) => r.channel), ['delivery', 'in_store', 'mobile']);
  const categories = await c.query<{ category: string }>('SELECT DISTINCT category FROM products ORDER BY 1');
  t.same(categories.rows.map((r) => r.category), ['Beans', 'Brewed coffee', 'Espresso drinks', 'Merch', 'Pastry', 'Tea']);
  t.ok((await one<{ n: number }>(c, 'SELECT count(*)::int AS n FROM orders WHERE customer_id IS NULL')).n > 5_000, 'walk-ins have no customer');

  // the patterns the data promises
  const growth = await one<{ first: number; last: number }>(
    c,
    `SELECT count(*) FILTER (WHERE ordered_at < '2025-11-01')::int AS first, count(*) FILTER (WHERE ordered_at >= '2025-11-01')::int AS last FROM orders`,
  );
  t.ok(growth.last > growth.first * 1.15, `the second year sells more (${growth.first} → ${growth.last})`);
  const season = await one<{ dec: number; feb: number }>(
    c,
    `SELECT count(*) FILTER (WHERE ordered_at >= '2025-12-01' AND ordered_at < '2026-01-01')::int AS dec,
            count(*) FILTER (WHERE ordered_at >= '2026-02-01' AND ordered_at < '2026-03-01')::int AS feb FROM orders`,
  );
  t.ok(season.dec > season.feb * 1.2, `December outsells February (${season.dec} vs ${season.feb})`);
  const stores = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM orders GROUP BY store_id ORDER BY 1');
  t.ok(stores.rows[stores.rows.length - 1]!.n > stores.rows[0]!.n * 2, 'stores differ in size');
});

t.test('money and keys are consistent', async (t) => {
  if (!a) return t.fail('not started');
  const c = await connect(a);
  t.teardown(() => c.end());
  const n = (sql: string): Promise<number> => one<{ n: number }>(c, sql).then((r) => r.n);
  t.equal(
    await n(`SELECT count(*)::int AS n FROM orders o
             LEFT JOIN (SELECT order_id, sum(line_total) AS s FROM order_lines GROUP BY order_id) l ON l.order_id = o.id
             WHERE l.s IS DISTINCT FROM o.total`),
    0,
    'every orders.total is the sum of its line_total',
  );
  t.equal(await n('SELECT count(*)::int AS n FROM order_lines WHERE line_total <> quantity * unit_price'), 0, 'line_total = quantity * unit_price');
  t.equal(await n('SELECT count(*)::int AS n FROM orders o JOIN stores s ON s.id = o.store_id WHERE o.ordered_at < s.opened_on'), 0, 'no orders before a store opened');
  t.equal(await n('SELECT count(*)::int AS n FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.ordered_at::date < c.joined_on'), 0, 'no orders before a customer joined');
  t.equal(
    await n(`SELECT count(*)::int AS n FROM order_lines l LEFT JOIN orders o ON o.id = l.order_id LEFT JOIN products p ON p.id = l.product_id
             WHERE o.id IS NULL OR p.id IS NULL`),
    0,
    'no orphan lines',
  );
  const fks = await c.query<{ fk: string }>(
    `SELECT conrelid::regclass::text || '.' || (SELECT attname FROM pg_attribute WHERE attrelid = conrelid AND attnum = conkey[1]) AS fk
     FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace ORDER BY 1`,
  );
  t.same(fks.rows.map((r) => r.fk), ['order_lines.order_id', 'order_lines.product_id', 'orders.customer_id', 'orders.store_id']);
  const idx = await c.query<{ def: string }>(`SELECT indexdef AS def FROM pg_indexes WHERE schemaname = 'public'`);
  for (const want of ['orders USING btree (ordered_at)', 'orders USING btree (store_id)', 'order_lines USING btree (order_id)']) {
    t.ok(idx.rows.some((r) => r.def.includes(want)), `index on ${want}`);
  }
  t.equal(
    await n(`SELECT count(*)::int AS n FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND obj_description(c.oid, 'pg_class') IS NOT NULL`),
    5,
    'every table has a comment',
  );
  t.equal(
    await n(`SELECT count(*)::int AS n FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
               AND col_description(c.oid, a.attnum) IS NULL`),
    0,
    'every column has a comment',
  );
  t.ok((await n(`SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = 'public' AND tablename = 'orders'`)) > 0, 'analyzed');
});

t.test('clients can only read', async (t) => {
  if (!a) return t.fail('not started');
  const c = await connect(a);
  t.teardown(() => c.end());
  t.equal((await one<{ u: string }>(c, 'SELECT current_user AS u')).u, 'cortado_reader');
  t.match(await rejection(c.query(`INSERT INTO stores VALUES (99, 'x', 'y', 'z', '2020-01-01')`)), { message: /read-only transaction/ });
  await c.query('BEGIN READ WRITE');
  t.match(await rejection(c.query('DELETE FROM order_lines')), { message: /permission denied/ }, 'the role has SELECT only');
  await c.query('ROLLBACK');
  t.match(await rejection(c.query(`SELECT * FROM ${DEMO_META_TABLE}`)), { message: /permission denied/ }, 'the version marker is not visible');
  t.equal((await one<{ n: number }>(c, 'SELECT count(*)::int AS n FROM orders')).n, PINNED.orders, 'nothing changed');
});

t.test('a slow query does not stall this thread (PGlite runs in a worker)', async (t) => {
  if (!a) return t.fail('not started');
  const c = await connect(a);
  t.teardown(() => c.end());
  let ticks = 0;
  const timer = setInterval(() => ticks++, 20);
  const started = Date.now();
  await c.query('SELECT count(*) FROM generate_series(1, 3000000) a');
  clearInterval(timer);
  const ms = Date.now() - started;
  t.ok(ms > 200, `the query took a while (${ms} ms)`);
  t.ok(ticks >= Math.floor(ms / 20 / 3), `timers kept firing while it ran (${ticks} ticks in ${ms} ms)`);
});

t.test('two clients query at the same time', async (t) => {
  if (!a) return t.fail('not started');
  const [c1, c2] = [await connect(a), await connect(a)];
  t.teardown(async () => {
    await c1.end();
    await c2.end();
  });
  const perStore = new Map(
    (await c1.query<{ id: number; n: number }>('SELECT store_id AS id, count(*)::int AS n FROM orders GROUP BY 1')).rows.map((r) => [r.id, r.n]),
  );
  const perProduct = new Map(
    (await c1.query<{ id: number; s: string }>('SELECT product_id AS id, sum(line_total)::text AS s FROM order_lines GROUP BY 1')).rows.map((r) => [r.id, r.s]),
  );
  // parameterized (extended protocol) queries from both, interleaved; one side in transactions
  const byStore = async (): Promise<number> => {
    let wrong = 0;
    for (let round = 0; round < 3; round++) {
      for (const [id, n] of perStore) {
        const r = await one<{ n: number }>(c1, 'SELECT count(*)::int AS n FROM orders WHERE store_id = $1', [id]);
        if (r.n !== n) wrong++;
      }
    }
    return wrong;
  };
  const byProduct = async (): Promise<number> => {
    let wrong = 0;
    for (const [id, s] of perProduct) {
      await c2.query('BEGIN READ ONLY');
      const r = await one<{ s: string }>(c2, 'SELECT sum(line_total)::text AS s FROM order_lines WHERE product_id = $1', [id]);
      await c2.query('COMMIT');
      if (r.s !== s) wrong++;
    }
    return wrong;
  };
  const [w1, w2] = await Promise.all([byStore(), byProduct()]);
  t.equal(w1, 0, `client 1: ${perStore.size * 3} answers right`);
  t.equal(w2, 0, `client 2: ${perProduct.size} answers right, each in a transaction`);
  // an error on one connection does not disturb the other
  const [bad, good] = await Promise.all([rejection(c1.query('SELECT 1 / ($1::int - $1::int)', [3])), one<{ n: number }>(c2, 'SELECT $1::int + 1 AS n', [41])]);
  t.match(bad, { message: /division by zero/ });
  t.equal(good.n, 42);
  t.equal((await one<{ n: number }>(c1, 'SELECT $1::int AS n', [7])).n, 7, 'the failed connection still works');
});

t.test('a directory in use is refused', async (t) => {
  const { log } = capturingLogger();
  const again = await rejection(startEmbeddedPostgres({ dir: dirA, maxConnections: 4, log }));
  t.ok(again instanceof CortadoError, 'a CortadoError');
  t.match(again, { code: 'CONFIG_INVALID', message: /in use by this process/ });

  // another live process holds the lock
  const child = endWithProcess(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
  t.teardown(() => {
    if (child.exitCode === null) child.kill();
  });
  const dirB = path.join(root, 'b');
  await mkdir(dirB);
  await writeFile(path.join(dirB, 'embedded.pid'), `${child.pid}\n`);
  const other = await rejection(startEmbeddedPostgres({ dir: dirB, maxConnections: 4, log }));
  t.match(other, { code: 'CONFIG_INVALID', message: new RegExp(`in use by process ${child.pid}`) });
  t.same(await readdir(dirB), ['embedded.pid'], 'nothing was opened');
});

t.test('a restart reuses the data, past a stale lock and socket', async (t) => {
  if (!a) return t.fail('not started');
  await a.stop();
  await a.stop(); // twice is harmless
  t.same((await readdir(dirA)).sort(), ['pgdata'], 'stop removes the socket and the lock');

  // what a killed process leaves: a lock naming a dead pid, a socket nobody listens on
  const dead = endWithProcess(spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }));
  await new Promise((resolve) => dead.once('exit', resolve));
  await writeFile(path.join(dirA, 'embedded.pid'), `${dead.pid}\n`);
  const tmpSock = path.join(root, 's.sock');
  const listener = net.createServer().listen(tmpSock);
  await new Promise((resolve) => listener.once('listening', resolve));
  await link(tmpSock, path.join(dirA, '.s.PGSQL.5432'));
  await new Promise((resolve) => listener.close(resolve));

  const { log, messages } = capturingLogger();
  const t0 = performance.now();
  a = await startEmbeddedPostgres({ dir: dirA, maxConnections: 4, log });
  const restartMs = performance.now() - t0;
  t.equal(generatedLines(messages()).length, 0, 'not generated again');
  t.ok(restartMs < firstStartMs, `faster than the first start (${Math.round(restartMs)} ms vs ${Math.round(firstStartMs)} ms)`);
  const c = await connect(a);
  t.equal((await one<{ s: string }>(c, 'SELECT sum(total)::text AS s FROM orders')).s, PINNED.sum_total, 'the same data');
  await c.end();
  await a.stop();
});

t.test('an older version marker has the data rebuilt', async (t) => {
  // edit the cluster directly, as an older Cortado would have left it
  const raw = await PGlite.create({ dataDir: path.join(dirA, 'pgdata') });
  await raw.exec(`UPDATE ${DEMO_META_TABLE} SET version = 0; UPDATE orders SET total = 0 WHERE id = 1`);
  await raw.close();

  const { log, messages } = capturingLogger();
  a = await startEmbeddedPostgres({ dir: dirA, maxConnections: 4, log });
  t.match(generatedLines(messages()), [{ reason: /^version 0/ }]);
  const c = await connect(a);
  t.equal((await one<{ s: string }>(c, 'SELECT sum(total)::text AS s FROM orders')).s, PINNED.sum_total, 'rebuilt to the current data');
  await c.end();
  await a.stop();
  a = undefined;
});

t.test('a long directory path gets its socket under the temp directory; a fresh directory gets the same data', async (t) => {
  const dirL = path.join(root, 'a-directory-name-long-enough-that-a-unix-socket-path-inside-it-would-not-fit');
  t.ok(Buffer.byteLength(path.join(dirL, '.s.PGSQL.5432')) > 100);
  const { log } = capturingLogger();
  const l = await startEmbeddedPostgres({ dir: dirL, maxConnections: 2, log });
  t.teardown(() => l.stop());
  t.not(l.host, dirL);
  t.ok(l.host.startsWith(os.tmpdir()), `socket in ${l.host}`);
  const c = await connect(l);
  t.equal((await one<{ s: string }>(c, 'SELECT sum(total)::text AS s FROM orders')).s, PINNED.sum_total, 'the same sum(total) as the first directory');
  await c.end();
  await l.stop();
  t.equal(await stat(l.host).then(() => 'exists', () => 'gone'), 'gone', 'the socket directory is removed on stop');
});

t.teardown(async () => {
  await a?.stop();
});
