/**
 * The masking attack corpus (test/fixtures/attacks-masking.ts: whole rows, name resolution,
 * documents) on a real PostgreSQL, through the executor and the masking actor over a real NATS,
 * twice: as a role that may only SELECT, and as the superuser. Each attack's raw rows hold a
 * secret; its masked rows hold none (test/helpers/masking-corpus.ts).
 */
import t from 'tap';
import pg from 'pg';
import { createLogger } from '../../runtime/log.js';
import { isWholeRowFunction } from '../../actors/lib/masking/functions.js';
import { MASKING_ATTACKS_POSTGRESQL, MASKING_SCHEMA_POSTGRESQL } from '../fixtures/attacks-masking.js';
import { testConfig } from '../helpers/config.js';
import { runMaskingCorpus, startCorpusExecutors } from '../helpers/masking-corpus.js';
import { startNats } from '../helpers/nats.js';
import { ADMIN_URL, createTestDb } from '../helpers/pg.js';

const nats = await startNats();
const db = await createTestDb('attacks_mask');
const suffix = `${process.pid}_${Math.floor(Math.random() * 1e6)}`;
const readOnlyRole = `cortado_mask_ro_${suffix}`;
const readOnlyPassword = `ro-${suffix}`;
await db.pool.query(MASKING_SCHEMA_POSTGRESQL);
await db.pool.query(`
  CREATE ROLE ${readOnlyRole} LOGIN PASSWORD '${readOnlyPassword}';
  GRANT USAGE ON SCHEMA public TO ${readOnlyRole};
  GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${readOnlyRole};`);

const log = createLogger({ svc: 'test', level: 'silent' });

t.teardown(async () => {
  await db.drop();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP ROLE IF EXISTS ${readOnlyRole}`).catch((err: unknown) => console.error(`cleanup: cannot drop ${readOnlyRole}:`, err));
  await admin.end();
  await nats.stop();
});

for (const login of [
  { label: 'a SELECT-only role', user: readOnlyRole, password: readOnlyPassword, privileged: false },
  { label: 'the superuser', user: db.user, password: '', privileged: true },
]) {
  t.test(`every masking attack, as ${login.label}`, async (t) => {
    const config = testConfig({
      natsUrl: nats.url,
      db: { host: db.host, port: db.port, name: db.name, user: login.user },
      extra: {
        database: { allow_privileged_role: login.privileged, postgresql: { password: login.password, max_connections: 2 } },
        query: { default_limit: 50, max_limit: 100, timeout: 10 },
      },
    });
    const running = await startCorpusExecutors(config, log, `attacks-mask-${login.privileged ? 'super' : 'ro'}`);
    t.teardown(() => running.stop(2_000));
    await runMaskingCorpus(t, running, 'postgresql', MASKING_ATTACKS_POSTGRESQL, login.privileged ? 'superuser' : 'read-only');
  });
}

t.test('every function of this server that takes a whole row in attribute notation is known to lineage', async (t) => {
  // callable with one argument a row fits; window functions and ordered-set aggregates need OVER / WITHIN GROUP
  const r = await db.pool.query<{ proname: string }>(`
    SELECT DISTINCT p.proname FROM pg_proc p LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
    WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind <> 'w' AND coalesce(a.aggkind, 'n') = 'n'
      AND ((p.pronargs >= 1 AND p.pronargs - p.pronargdefaults <= 1) OR (p.provariadic <> 0 AND p.pronargs = 1))
      AND p.proargtypes[0]::regtype::text IN ('record', 'anyelement', 'anynonarray', '"any"', 'anycompatible', 'anycompatiblenonarray')
    ORDER BY 1`);
  // count(c) is a number (lineage never traces count's arguments); *_build_object(c) is an error (one argument)
  const exempt = new Set(['count', 'json_build_object', 'jsonb_build_object']);
  const names = r.rows.map((x) => x.proname).filter((n) => !exempt.has(n));
  t.ok(names.length >= 20, `${names.length} functions`);
  t.same(names.filter((n) => !isWholeRowFunction(n)), [], 'none missing from functions.ts WHOLE_ROW');
  const probe = await db.pool.query('SELECT c.concat AS a, c.row_to_json AS b FROM customers c LIMIT 1');
  t.match(String(probe.rows[0]?.a), /analytical\.example/, 'the server really calls them in attribute notation');
});
