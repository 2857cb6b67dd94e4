/**
 * The PostgreSQL SQL guard as a pure function: what it refuses (and why), what it lets
 * through (and which relations it reads), and how it edits the LIMIT, to the character.
 */
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { guardSql, prepareGuard } from '../../actors/executor/guard/index.js';
import { deniedFunction } from '../../actors/executor/guard/deny.js';
import { ACCEPTED_POSTGRESQL, LIMIT_CASES_POSTGRESQL, LIMITS, REJECTED_POSTGRESQL } from '../fixtures/guard-cases.js';

await prepareGuard('postgresql');

function rejection(fn: () => unknown): CortadoError | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CortadoError ? err : undefined;
  }
  return undefined;
}

t.test('rejected statements', async (t) => {
  t.ok(REJECTED_POSTGRESQL.length >= 35, `${REJECTED_POSTGRESQL.length} rejected cases`);
  for (const c of REJECTED_POSTGRESQL) {
    const err = rejection(() => guardSql(c.sql, 'postgresql', LIMITS));
    t.equal(err?.code, 'SQL_REJECTED', `${c.name}: SQL_REJECTED`);
    t.equal(err?.details?.kind, c.kind, `${c.name}: kind ${c.kind}`);
    t.ok(err && err.message.length > 10, `${c.name}: a readable reason (${err?.message})`);
  }
});

t.test('the empty string is rejected as empty', async (t) => {
  t.equal(rejection(() => guardSql('', 'postgresql', LIMITS))?.details?.kind, 'empty');
});

t.test('reasons name what was found', async (t) => {
  t.match(rejection(() => guardSql('DELETE FROM orders', 'postgresql', LIMITS))?.message, /DELETE/);
  t.match(rejection(() => guardSql('SELECT pg_catalog.PG_SLEEP(1)', 'postgresql', LIMITS))?.details, { function: 'pg_sleep' });
  t.match(rejection(() => guardSql('SELECT 1; SELECT 2; SELECT 3', 'postgresql', LIMITS))?.details, { count: 3 });
  t.match(rejection(() => guardSql('SELECT * FROM t FOR KEY SHARE', 'postgresql', LIMITS))?.message, /FOR KEY SHARE/);
  const parse = rejection(() => guardSql('SELECT * FROM orders WHERE', 'postgresql', LIMITS));
  t.match(parse?.message, /does not parse/);
  t.type(parse?.details?.position, 'number');
  // the position counts characters from 1, whatever their size in bytes
  t.match(rejection(() => guardSql("SELECT 'é', 'ü' FROM WHERE", 'postgresql', LIMITS))?.details, { kind: 'parse', position: 22 });
  t.match(rejection(() => guardSql("SELECT '😀' FROM WHERE", 'postgresql', LIMITS))?.details, { kind: 'parse', position: 18 });
});

t.test('accepted analytical queries', async (t) => {
  t.ok(ACCEPTED_POSTGRESQL.length >= 20, `${ACCEPTED_POSTGRESQL.length} accepted cases`);
  for (const c of ACCEPTED_POSTGRESQL) {
    const err = rejection(() => guardSql(c.sql, 'postgresql', LIMITS));
    t.notOk(err, `${c.name}: accepted${err ? ` (rejected: ${err.message})` : ''}`);
    if (err) continue;
    const r = guardSql(c.sql, 'postgresql', LIMITS);
    t.same(r.tables, c.tables, `${c.name}: tables`);
    t.ok(r.limit >= 1 && r.limit <= LIMITS.maxLimit, `${c.name}: limit within the maximum`);
  }
});

t.test('LIMIT injection, clamping, keeping and wrapping', async (t) => {
  for (const c of LIMIT_CASES_POSTGRESQL) {
    const r = guardSql(c.sql, 'postgresql', c.limits ?? LIMITS);
    t.same({ sql: r.sql, runSql: r.runSql, limit: r.limit, capped: r.capped }, c.expect, c.name);
  }
});

t.test('the guard output is itself accepted, and its LIMIT kept', async (t) => {
  for (const c of LIMIT_CASES_POSTGRESQL) {
    const limits = c.limits ?? LIMITS;
    const first = guardSql(c.sql, 'postgresql', limits);
    const again = guardSql(first.sql, 'postgresql', limits);
    t.equal(again.limit, first.limit, `${c.name}: same limit the second time`);
    t.equal(again.sql, first.sql, `${c.name}: unchanged the second time`);
  }
});

t.test('the deny list', async (t) => {
  for (const name of [
    'pg_sleep', 'pg_sleep_until', 'PG_READ_BINARY_FILE', 'pg_ls_waldir', 'pg_file_write', 'lo_export', 'loread', 'lowrite',
    'dblink', 'dblink_connect', 'query_to_xml_and_xmlschema', 'table_to_xmlschema', 'cursor_to_xml', 'database_to_xml', 'schema_to_xml',
    'set_config', 'pg_cancel_backend', 'pg_rotate_logfile', 'pg_promote', 'pg_switch_wal', 'pg_create_restore_point', 'pg_backup_start',
    'pg_start_backup', 'pg_stop_backup', 'pg_replication_origin_create', 'pg_logical_emit_message', 'pg_create_physical_replication_slot',
    'pg_drop_replication_slot', 'pg_stat_reset_shared', 'pg_advisory_xact_lock', 'pg_try_advisory_lock', 'pg_import_system_collations',
    'nextval', 'setval', 'txid_current', 'pg_current_xact_id',
  ]) {
    t.ok(deniedFunction('postgresql', name), `${name} is denied`);
  }
  for (const name of ['count', 'sum', 'date_trunc', 'now', 'pg_size_pretty', 'current_setting', 'generate_series', 'pg_typeof', 'currval', 'lower']) {
    t.notOk(deniedFunction('postgresql', name), `${name} is allowed`);
  }
});

t.test('dialects without a guard refuse to run anything', async (t) => {
  // every configured dialect has one now; a dialect name without one (a future provider) runs nothing
  const err = rejection(() => guardSql('SELECT 1', 'sqlite' as never, LIMITS));
  t.equal(err?.code, 'SQL_REJECTED');
  t.equal(err?.details?.kind, 'unsupported_dialect');
});
