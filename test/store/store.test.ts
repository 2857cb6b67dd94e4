/**
 * The storage (store/): one suite, run against both implementations (memory, and PostgreSQL on
 * a throwaway database), with a test per repository (overrides, prompts, LDAP settings, tokens,
 * mask rules, audit, semantic layer); then what only one of them has: PostgreSQL's versioned migrations
 * (idempotent, safe with concurrent starts), data surviving a new storage on the same database
 * and rows written by an earlier release read back, DB_UNAVAILABLE without the password;
 * memory's bounded audit log; openStorage's choice.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import {
  MEMORY_AUDIT_CAP, MIGRATIONS, memoryStorage, migrate, openStorage, postgresStorage, type ApiTokenRecord, type AuditEntry, type Storage,
} from '../../store/index.js';
import { createTestDb, type TestDb } from '../helpers/pg.js';
import { orderedId } from '../../actors/workspace/ordered-id.js';

const log = createLogger({ svc: 'test', level: 'silent' });

interface Made {
  store: Storage;
  done(): Promise<void>;
}
type Factory = () => Promise<Made>;

const dbs: TestDb[] = [];
t.teardown(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

function pgOptions(db: TestDb) {
  return { host: db.host, port: db.port, database: db.name, user: db.user, password: '', log };
}

const memoryFactory: Factory = async () => {
  const store = memoryStorage();
  await store.init();
  return { store, done: () => store.close() };
};

const postgresFactory: Factory = async () => {
  const db = await createTestDb('store');
  dbs.push(db);
  const store = postgresStorage(pgOptions(db));
  await store.init();
  return { store, done: () => store.close() };
};

function token(over: Partial<ApiTokenRecord> = {}): ApiTokenRecord {
  const id = over.id ?? `tok-${Math.random().toString(36).slice(2)}`;
  return {
    id,
    prefix: 'ctd_ab12',
    hash: `hash-of-${id}`,
    label: 'laptop',
    username: 'alice',
    db_config: { provider: 'postgresql', host: 'db', password: { enc: 'gAAAA-not-real' } },
    created_at: '2024-05-01T10:00:00.000Z',
    expires_at: '2024-06-01T10:00:00.000Z',
    ...over,
  };
}

function event(id: string, over: Partial<AuditEntry> = {}): AuditEntry {
  return { event_id: id, type: 'query.executed', ts: '2024-05-01T10:00:00.000Z', payload: { id, rows: 3 }, ...over };
}

async function rejects(p: Promise<unknown>): Promise<CortadoError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected a CortadoError, got ${String(err)}`);
  return err;
}

/** The behaviour both implementations share. */
function storeSuite(name: string, make: Factory): void {
  t.test(`${name}: the same behaviour`, async (t) => {
    const made: Made[] = [];
    t.teardown(async () => {
      await Promise.all(made.map((m) => m.done()));
    });
    const fresh = async (): Promise<Storage> => {
      const m = await make();
      made.push(m);
      return m.store;
    };

    t.test('workspace: history bounded per owner with every favourite kept; dashboards per owner', async (t) => {
      const s = await fresh();
      const at = (i: number): string => new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString();
      for (let i = 0; i < 5; i++) await s.workspace.addHistory({ id: `h${i}`, owner: 'a:1', question: `q${i}`, favourite: i === 0, at: at(i), ...(i === 1 ? { sql: 'SELECT 1', row_count: 1, request_id: 'r1' } : {}) }, 3);
      await s.workspace.addHistory({ id: 'other', owner: 'a:2', question: 'theirs', favourite: false, at: at(9) }, 3);
      t.same((await s.workspace.listHistory('a:1', { limit: 10 })).map((e) => e.id), ['h4', 'h3', 'h2', 'h0'], 'the newest 3 and the favourite');
      t.same((await s.workspace.listHistory('a:1', { limit: 2 })).map((e) => e.id), ['h4', 'h3'], 'limit');
      t.same((await s.workspace.listHistory('a:1', { limit: 10, favourites: true })).map((e) => e.id), ['h0']);
      t.equal(await s.workspace.setFavourite('a:2', 'h4', true), undefined, 'another owner cannot touch it');
      t.equal((await s.workspace.setFavourite('a:1', 'h4', true))?.favourite, true);
      t.equal(await s.workspace.removeHistory('a:2', 'h3'), false);
      t.equal(await s.workspace.removeHistory('a:1', 'h3'), true);
      t.same((await s.workspace.listHistory('a:1', { limit: 10 })).map((e) => [e.id, e.favourite]), [['h4', true], ['h2', false], ['h0', true]]);
      await s.workspace.addHistory({ id: 'h5', owner: 'a:1', question: 'q5', sql: 'SELECT 5', row_count: 7, request_id: 'r5', favourite: false, at: at(20) }, 1);
      t.same(await s.workspace.listHistory('a:1', { limit: 10 }), [
        { id: 'h5', owner: 'a:1', question: 'q5', sql: 'SELECT 5', row_count: 7, request_id: 'r5', favourite: false, at: at(20) },
        { id: 'h4', owner: 'a:1', question: 'q4', favourite: true, at: at(4) },
        { id: 'h0', owner: 'a:1', question: 'q0', favourite: true, at: at(0) },
      ], 'keep 1: one plain entry and the favourites, fields as stored');

      // entries made in one millisecond keep the order they were made in, and the oldest go first
      const same = at(30);
      const made: string[] = [];
      for (let i = 0; i < 40; i++) {
        const id = orderedId(Date.parse(same));
        made.push(id);
        await s.workspace.addHistory({ id, owner: 'a:3', question: `same ${i}`, favourite: false, at: same }, 30);
      }
      t.same((await s.workspace.listHistory('a:3', { limit: 50 })).map((e) => e.id), made.slice(10).reverse(), 'one millisecond: newest first, the ten oldest dropped');

      const tiles = [{ id: 't1', title: 'Revenue', question: 'monthly revenue', refresh: 'on_open' }, { id: 't2', title: 'Pinned', sql: 'SELECT 1', refresh: '0 8 * * *', timezone: 'UTC' }];
      const d = await s.workspace.putDashboard({ id: 'd1', owner: 'a:1', name: 'Sales', tiles, created_at: at(1), updated_at: at(1) });
      t.same(d.tiles, tiles);
      const again = await s.workspace.putDashboard({ id: 'd1', owner: 'a:1', name: 'Sales 2', tiles: [], created_at: at(5), updated_at: at(6) });
      t.same([again.name, again.created_at, again.updated_at, again.tiles], ['Sales 2', at(1), at(6), []], 'replaced, created_at kept');
      await s.workspace.putDashboard({ id: 'd1', owner: 'a:2', name: 'Also d1', tiles: [], created_at: at(1), updated_at: at(1) });
      t.same((await s.workspace.listDashboards('a:1')).map((x) => x.name), ['Sales 2']);
      t.equal(await s.workspace.countDashboards('a:2'), 1);
      t.equal((await s.workspace.getDashboard('a:2', 'd1'))?.name, 'Also d1', 'the same id for two owners stays two dashboards');
      t.equal(await s.workspace.removeDashboard('a:2', 'nope'), false);
      t.equal(await s.workspace.removeDashboard('a:1', 'd1'), true);
      t.equal(await s.workspace.getDashboard('a:1', 'd1'), undefined);
    });

    t.test('overrides: set, replace, delete, with history old → new and who', async (t) => {
      const s = await fresh();
      t.same(await s.overrides.list(), []);
      t.same(await s.overrides.set('query.max_limit', 500, 'alice'), {}, 'a new key has no previous value');
      t.same(await s.overrides.set('query.max_limit', 800, 'bob'), { previous: 500 });
      await s.overrides.set('ldap.server', { url: 'ldap://x', tls: false }, 'carol');
      await s.overrides.set('a.null_value', null, 'carol');

      const list = await s.overrides.list();
      t.same(list.map((o) => [o.key, o.value, o.updated_by]), [
        ['a.null_value', null, 'carol'],
        ['ldap.server', { url: 'ldap://x', tls: false }, 'carol'],
        ['query.max_limit', 800, 'bob'],
      ], 'sorted by key, the newest value and who set it');
      t.ok(list.every((o) => !Number.isNaN(Date.parse(o.updated_at))), 'updated_at is a time');

      // what a caller does to an object it passed or got back changes nothing stored
      const got = list.find((o) => o.key === 'ldap.server');
      (got?.value as Record<string, unknown>).url = 'changed';
      t.same((await s.overrides.list()).find((o) => o.key === 'ldap.server')?.value, { url: 'ldap://x', tls: false });

      t.equal(await s.overrides.delete('query.max_limit', 'dave'), true);
      t.equal(await s.overrides.delete('query.max_limit', 'dave'), false, 'nothing left to delete');
      t.same((await s.overrides.list()).map((o) => o.key), ['a.null_value', 'ldap.server']);

      const all = await s.overrides.history();
      t.same(all.map((c) => [c.key, c.old_value, c.new_value, c.changed_by]), [
        ['query.max_limit', 800, undefined, 'dave'],
        ['a.null_value', undefined, null, 'carol'],
        ['ldap.server', undefined, { url: 'ldap://x', tls: false }, 'carol'],
        ['query.max_limit', 500, 800, 'bob'],
        ['query.max_limit', undefined, 500, 'alice'],
      ], 'newest first; absent (no override) differs from a JSON null');
      t.notOk('old_value' in (all[4] as object), 'no old_value property when the key had no override');
      t.notOk('new_value' in (all[0] as object), 'no new_value property when the override was removed');
      t.ok((all[0]?.id ?? 0) > (all[1]?.id ?? 0), 'ids grow');

      const one = await s.overrides.history({ key: 'query.max_limit', limit: 2 });
      t.same(one.map((c) => c.new_value), [undefined, 800], 'by key, limited');
      const next = await s.overrides.history({ key: 'query.max_limit', limit: 2, offset: 2 });
      t.same(next.map((c) => c.new_value), [500], 'paged');

      t.equal((await rejects(s.overrides.set('x', undefined, 'a'))).code, 'VALIDATION_FAILED', 'undefined is not a value');
    });

    t.test('overrides: concurrent writers leave an unbroken history chain', async (t) => {
      const s = await fresh();
      await Promise.all(Array.from({ length: 10 }, (_, i) => (i === 7 ? s.overrides.delete('race', `w${i}`) : s.overrides.set('race', i, `w${i}`))));
      const chain = (await s.overrides.history({ key: 'race' })).reverse();
      t.equal(chain[0]?.old_value, undefined, 'the first change had nothing before it');
      for (let i = 1; i < chain.length; i++) {
        t.same(chain[i]?.old_value, chain[i - 1]?.new_value, `change ${i} replaced what change ${i - 1} wrote`);
      }
      const now = (await s.overrides.list()).find((o) => o.key === 'race');
      t.same(now?.value, chain.at(-1)?.new_value, 'the stored value is the last change');
    });

    t.test('prompts: a section of the overrides, by prompt name, in the one history', async (t) => {
      const s = await fresh();
      t.same(await s.prompts.list(), []);
      t.same(await s.prompts.set('sql_generation', 'Write SQL.', 'alice'), {}, 'nothing before');
      t.same(await s.prompts.set('sql_generation', 'Write careful SQL.', 'bob'), { previous: 'Write SQL.' });
      await s.prompts.set('insights', 'Be brief.', 'bob');
      await s.overrides.set('query.max_limit', 10, 'carol');
      t.same((await s.prompts.list()).map((p) => [p.name, p.value, p.updated_by]), [
        ['insights', 'Be brief.', 'bob'],
        ['sql_generation', 'Write careful SQL.', 'bob'],
      ], 'only the prompts, by name');
      t.same((await s.overrides.list()).map((o) => o.key), ['prompts.insights', 'prompts.sql_generation', 'query.max_limit'], 'kept as overrides prompts.<name>');
      t.same((await s.overrides.history({ key: 'prompts.sql_generation' })).map((c) => [c.old_value, c.new_value]), [
        ['Write SQL.', 'Write careful SQL.'], [undefined, 'Write SQL.'],
      ], 'a prompt change is in the override history');
      // what the admin panel stored as a config change is a prompt too
      await s.overrides.set('prompts.intent_detection', 'Classify.', 'dave');
      t.same((await s.prompts.list()).map((p) => p.name), ['insights', 'intent_detection', 'sql_generation']);

      t.equal(await s.prompts.reset('insights', 'erin'), true);
      t.equal(await s.prompts.reset('insights', 'erin'), false, 'nothing left to reset');
      t.notOk((await s.overrides.list()).some((o) => o.key === 'prompts.insights'));
      t.equal((await rejects(s.prompts.set('sql_generation', 42 as unknown as string, 'x'))).code, 'VALIDATION_FAILED', 'a prompt is text');
      t.equal((await rejects(s.prompts.set('a.b', 'x', 'x'))).code, 'VALIDATION_FAILED', 'a name is one key, not a path');
      t.equal((await rejects(s.prompts.reset('', 'x'))).code, 'VALIDATION_FAILED');
    });

    t.test('LDAP settings: a section of the overrides, sealed secrets kept as given', async (t) => {
      const s = await fresh();
      const sealed = { enc: 'gAAAA-not-real' };
      await s.ldap.set('server', 'ldap://dir:389', 'alice');
      await s.ldap.set('bind_password', sealed, 'alice');
      t.same(await s.ldap.set('use_ssl', false, 'bob'), {});
      t.same(await s.ldap.set('use_ssl', true, 'bob'), { previous: false }, 'any JSON value, false included');
      await s.prompts.set('insights', 'Be brief.', 'bob');
      t.same((await s.ldap.list()).map((x) => [x.name, x.value]), [
        ['bind_password', sealed], ['server', 'ldap://dir:389'], ['use_ssl', true],
      ], 'only the ldap section, secrets as stored');
      t.same((await s.overrides.list()).find((o) => o.key === 'ldap.bind_password')?.value, sealed, 'kept as the override ldap.bind_password');
      t.equal(await s.ldap.reset('server', 'carol'), true);
      t.same((await s.ldap.list()).map((x) => x.name), ['bind_password', 'use_ssl']);
      t.same((await s.overrides.history({ key: 'ldap.server' }))[0]?.changed_by, 'carol', 'the reset is recorded');
    });

    t.test('API tokens: insert, find by hash, list by user, revoke, delete, touch', async (t) => {
      const s = await fresh();
      const a1 = token({ id: 'a1', created_at: '2024-05-01T10:00:00Z' });
      const a2 = token({ id: 'a2', created_at: '2024-05-03T10:00:00Z', label: 'ci' });
      const b1 = token({ id: 'b1', username: 'bob', created_at: '2024-05-02T10:00:00Z' });
      for (const tk of [a1, a2, b1]) await s.tokens.insert(tk);

      const found = await s.tokens.findByHash('hash-of-a1');
      t.same(found, { ...a1, created_at: '2024-05-01T10:00:00.000Z' }, 'found by hash, times as ISO with milliseconds');
      t.notOk(found && 'revoked_at' in found, 'no revoked_at property until revoked');
      t.equal(await s.tokens.findByHash('nope'), undefined);
      t.equal((await s.tokens.get('b1'))?.username, 'bob');
      t.equal(await s.tokens.get('nope'), undefined);

      t.same((await s.tokens.list()).map((x) => x.id), ['a2', 'b1', 'a1'], 'newest first');
      t.same((await s.tokens.list({ username: 'alice' })).map((x) => x.id), ['a2', 'a1'], 'by user');
      t.same(await s.tokens.list({ username: 'nobody' }), []);

      t.equal((await rejects(s.tokens.insert(token({ id: 'a1', hash: 'other' })))).code, 'CONFLICT', 'same id');
      t.equal((await rejects(s.tokens.insert(token({ id: 'zz', hash: 'hash-of-a1' })))).code, 'CONFLICT', 'same hash');

      await s.tokens.touch('a1', '2024-05-05T12:00:00.000Z');
      await s.tokens.touch('a1', '2024-05-04T12:00:00.000Z');
      t.equal((await s.tokens.get('a1'))?.last_used_at, '2024-05-05T12:00:00.000Z', 'last use never moves back');
      await s.tokens.touch('nope', '2024-05-05T12:00:00.000Z');

      t.equal(await s.tokens.revoke('a1', '2024-05-06T00:00:00.000Z'), true);
      t.equal(await s.tokens.revoke('a1', '2024-05-07T00:00:00.000Z'), true, 'revoking twice is fine');
      t.equal((await s.tokens.findByHash('hash-of-a1'))?.revoked_at, '2024-05-06T00:00:00.000Z', 'and keeps the first time');
      t.equal(await s.tokens.revoke('nope', '2024-05-06T00:00:00.000Z'), false);
      t.equal((await s.tokens.get('a2'))?.revoked_at, undefined, 'others untouched');

      t.equal(await s.tokens.delete('a1'), true);
      t.equal(await s.tokens.delete('a1'), false);
      t.equal(await s.tokens.findByHash('hash-of-a1'), undefined, 'gone by hash too');
      await s.tokens.insert(token({ id: 'a3', hash: 'hash-of-a1' }));
      t.equal((await s.tokens.findByHash('hash-of-a1'))?.id, 'a3', 'a deleted token frees its hash');
      t.same((await s.tokens.get('a2'))?.db_config, a2.db_config, 'db_config kept as given (sealed secrets included)');
    });

    t.test('mask rules: create, list in order, update, delete (validation is the caller’s)', async (t) => {
      const s = await fresh();
      const r1 = await s.maskRules.create({ field_pattern: '*email*', strategy: 'partial' });
      t.match(r1, { field_pattern: '*email*', strategy: 'partial', enabled: true, description: '' }, 'defaults');
      t.ok(r1.id && r1.created_at === r1.updated_at);
      const r2 = await s.maskRules.create({ field_pattern: 'ssn', strategy: 'redact', enabled: false, description: 'US SSN' });
      const r3 = await s.maskRules.create({ field_pattern: 'card_*', strategy: 'hash' });
      t.same((await s.maskRules.list()).map((r) => r.id), [r1.id, r2.id, r3.id], 'creation order');
      t.same((await s.maskRules.list())[1], r2, 'listed as created');

      await new Promise((r) => setTimeout(r, 5));
      const u = await s.maskRules.update(r2.id, { enabled: true });
      t.match(u, { id: r2.id, field_pattern: 'ssn', strategy: 'redact', enabled: true, description: 'US SSN', created_at: r2.created_at });
      t.ok(u && u.updated_at > r2.updated_at, 'updated_at moves');
      const u2 = await s.maskRules.update(r2.id, { field_pattern: 'social_*', strategy: 'hash', description: '' });
      t.match(u2, { field_pattern: 'social_*', strategy: 'hash', enabled: true, description: '' }, 'empty description is a value');
      t.equal(await s.maskRules.update('nope', { enabled: false }), undefined);

      t.equal(await s.maskRules.delete(r1.id), true);
      t.equal(await s.maskRules.delete(r1.id), false);
      t.same((await s.maskRules.list()).map((r) => r.field_pattern), ['social_*', 'card_*']);
    });

    t.test('semantic: entities with columns, relationships, metrics; conflicts, missing entities, delete cascades', async (t) => {
      const s = await fresh();
      const sem = s.semantic;
      t.same(await sem.listEntities(), []);
      const orders = await sem.createEntity({
        schema_name: 'public', table_name: 'orders', display_name: 'Orders', synonyms: ['purchases'],
        columns: [
          { name: 'total', role: 'metric', aggregation: 'sum', display_name: 'Order total', synonyms: ['revenue'] },
          { name: 'status', role: 'dimension' },
        ],
      });
      t.match(orders, {
        id: 1, catalog: '', schema_name: 'public', table_name: 'orders', display_name: 'Orders', description: '', primary_key: '',
        entity_type: 'table', synonyms: ['purchases'],
      }, 'defaults; integer ids from 1');
      t.same(orders.columns.map((c) => [c.name, c.role, c.aggregation, c.entity_id, c.synonyms, c.data_type]),
        [['total', 'metric', 'sum', orders.id, ['revenue'], ''], ['status', 'dimension', undefined, orders.id, [], '']], 'columns in creation order');
      t.notOk('aggregation' in (orders.columns[1] as object), 'no aggregation when none was given');
      t.equal(orders.created_at, orders.updated_at);
      t.same(await sem.getEntity(orders.id), orders, 'read back as created');

      const customers = await sem.createEntity({ catalog: 'shop', schema_name: 'sales', table_name: 'customers', display_name: 'Customers', entity_type: 'view', primary_key: 'id' });
      t.ok(customers.id > orders.id);
      t.same((await sem.listEntities()).map((e) => e.id), [orders.id, customers.id], 'by id');
      t.same((await sem.listEntities({ schema_name: 'sales' })).map((e) => e.table_name), ['customers']);
      t.same((await sem.listEntities({ catalog: '' })).map((e) => e.table_name), ['orders'], "'' matches entities without a catalog");
      t.same(await sem.listEntities({ catalog: 'shop', schema_name: 'public' }), []);

      t.equal((await rejects(sem.createEntity({ schema_name: 'public', table_name: 'orders', display_name: 'Again' }))).code, 'CONFLICT', 'one entity per table');
      t.equal((await rejects(sem.createEntity({ schema_name: 'public', table_name: 'lines', display_name: 'Lines',
        columns: [{ name: 'a', role: 'dimension' }, { name: 'a', role: 'metric' }] }))).code, 'CONFLICT', 'a column name twice');
      t.same((await sem.listEntities()).map((e) => e.table_name), ['orders', 'customers'], 'all or nothing: the refused entity is not there');

      await new Promise((r) => setTimeout(r, 5));
      const u = await sem.updateEntity(orders.id, { description: 'one row per order', synonyms: [] });
      t.match(u, { id: orders.id, table_name: 'orders', display_name: 'Orders', description: 'one row per order', synonyms: [], created_at: orders.created_at });
      t.ok(u && u.updated_at > orders.updated_at, 'updated_at moves');
      t.equal(u?.columns.length, 2, 'the columns come with it');
      t.equal((await rejects(sem.updateEntity(customers.id, { catalog: '', schema_name: 'public', table_name: 'orders' }))).code, 'CONFLICT');
      t.equal(await sem.updateEntity(999, { description: 'x' }), undefined);

      const col = await sem.addColumn(orders.id, { name: 'customer_id', role: 'dimension', data_type: 'integer' });
      t.match(col, { entity_id: orders.id, name: 'customer_id', role: 'dimension', display_name: '', description: '', synonyms: [], data_type: 'integer' });
      t.equal(await sem.addColumn(999, { name: 'x', role: 'dimension' }), undefined, 'no such entity');
      t.equal((await rejects(sem.addColumn(orders.id, { name: 'status', role: 'dimension' }))).code, 'CONFLICT');
      const uc = await sem.updateColumn(orders.id, col!.id, { display_name: 'Customer', synonyms: ['client'] });
      t.match(uc, { id: col!.id, name: 'customer_id', display_name: 'Customer', synonyms: ['client'], data_type: 'integer' });
      t.equal(await sem.updateColumn(customers.id, col!.id, { display_name: 'x' }), undefined, 'a column of another entity');
      t.equal((await rejects(sem.updateColumn(orders.id, col!.id, { name: 'total' }))).code, 'CONFLICT');
      t.same((await sem.getEntity(orders.id))?.columns.map((c) => c.name), ['total', 'status', 'customer_id']);
      t.equal(await sem.deleteColumn(customers.id, col!.id), false);
      t.equal(await sem.deleteColumn(orders.id, (orders.columns[1] as { id: number }).id), true);
      t.equal(await sem.deleteColumn(orders.id, (orders.columns[1] as { id: number }).id), false);
      t.same((await sem.getEntity(orders.id))?.columns.map((c) => c.name), ['total', 'customer_id']);

      const rel = await sem.createRelationship({
        name: 'order customer', from_entity_id: orders.id, from_column: 'customer_id', to_entity_id: customers.id, to_column: 'id', relationship_type: 'many_to_one',
      });
      t.match(rel, { id: 1, join_type: 'LEFT', description: '', relationship_type: 'many_to_one' }, 'LEFT when not said');
      t.same(await sem.getRelationship(rel.id), rel);
      t.equal((await rejects(sem.createRelationship({ ...rel, name: 'again' }))).code, 'CONFLICT', 'the same two columns');
      const missing = await rejects(sem.createRelationship({ name: 'x', from_entity_id: orders.id, from_column: 'a', to_entity_id: 77, to_column: 'b', relationship_type: 'one_to_one' }));
      t.equal(missing.code, 'VALIDATION_FAILED');
      t.match(missing.message, /to_entity_id.*77/, 'names the field and the id');
      const self = await sem.createRelationship({ name: 'self', from_entity_id: orders.id, from_column: 'a', to_entity_id: orders.id, to_column: 'b', relationship_type: 'one_to_one', join_type: 'INNER' });
      t.match(await sem.updateRelationship(self.id, { join_type: 'RIGHT', description: 'd' }), { join_type: 'RIGHT', description: 'd', name: 'self' });
      t.equal((await rejects(sem.updateRelationship(self.id, { from_entity_id: 55 }))).code, 'VALIDATION_FAILED');
      t.equal((await rejects(sem.updateRelationship(self.id, { from_column: 'customer_id', to_entity_id: customers.id, to_column: 'id' }))).code, 'CONFLICT');
      t.equal(await sem.updateRelationship(999, { name: 'x' }), undefined);
      t.same((await sem.listRelationships()).map((r) => r.id), [rel.id, self.id], 'by id');

      const revenue = await sem.createMetric({ name: 'revenue', display_name: 'Revenue', sql_expression: 'SUM(orders.total)', entity_id: orders.id, synonyms: ['sales'] });
      t.match(revenue, { id: 1, active: true, format_type: '', category: '', description: '', entity_id: orders.id, synonyms: ['sales'] });
      const count = await sem.createMetric({ name: 'order_count', display_name: 'Orders', sql_expression: 'COUNT(*)', active: false, format_type: 'currency' });
      t.equal(count.entity_id, null, 'no entity: null');
      t.equal((await rejects(sem.createMetric({ name: 'revenue', display_name: 'R', sql_expression: 'SUM(1)' }))).code, 'CONFLICT');
      const m404 = await rejects(sem.createMetric({ name: 'm', display_name: 'M', sql_expression: 'SUM(1)', entity_id: 42 }));
      t.equal(m404.code, 'VALIDATION_FAILED');
      t.match(m404.message, /entity_id.*42/);
      t.same((await sem.listMetrics(true)).map((m) => m.name), ['revenue'], 'active only');
      t.same((await sem.listMetrics(false)).map((m) => m.name), ['revenue', 'order_count'], 'all, by id');
      t.match(await sem.updateMetric(count.id, { active: true, entity_id: customers.id }), { active: true, entity_id: customers.id, format_type: 'currency' });
      t.match(await sem.updateMetric(count.id, { description: 'how many' }), { entity_id: customers.id, description: 'how many' }, 'entity kept when not said');
      t.match(await sem.updateMetric(count.id, { entity_id: null }), { entity_id: null }, 'null detaches');
      t.equal((await rejects(sem.updateMetric(count.id, { name: 'revenue' }))).code, 'CONFLICT');
      t.equal((await rejects(sem.updateMetric(count.id, { entity_id: 42 }))).code, 'VALIDATION_FAILED');
      t.equal(await sem.updateMetric(999, { active: false }), undefined);
      t.same(await sem.getMetric(revenue.id), revenue);

      // deleting an entity: its columns and relationships go, its metrics stay detached
      const deleted = await sem.deleteEntity(orders.id);
      t.same(deleted, { deleted_columns: 2, deleted_relationships: [rel.id, self.id], detached_metrics: [revenue.id] });
      t.equal(await sem.getEntity(orders.id), undefined);
      t.same(await sem.listRelationships(), []);
      t.match(await sem.getMetric(revenue.id), { entity_id: null, sql_expression: 'SUM(orders.total)' });
      t.equal(await sem.deleteEntity(orders.id), undefined);
      t.equal(await sem.addColumn(orders.id, { name: 'x', role: 'dimension' }), undefined, 'a deleted entity takes no column');
      const again = await sem.createEntity({ schema_name: 'public', table_name: 'orders', display_name: 'Orders' });
      t.ok(again.id > customers.id, 'ids are not reused');
      t.same(again.columns, [], 'no column came back with the table');

      t.equal(await sem.deleteMetric(count.id), true);
      t.equal(await sem.deleteMetric(count.id), false);
      t.equal(await sem.deleteRelationship(rel.id), false);
      t.same((await sem.listMetrics(false)).map((m) => m.name), ['revenue']);

      // copies in and out
      const got = await sem.getEntity(customers.id);
      got!.synonyms.push('changed');
      t.same((await sem.getEntity(customers.id))?.synonyms, [], 'a returned record is a copy');
    });

    t.test('schedules: unique names per owner, executions once per tick, newest first, retention, delete cascades', async (t) => {
      const s = await fresh();
      const base = {
        question: 'orders per day', tables: ['orders'], cron: '0 9 * * 1-5', own_timezone: 'Europe/Berlin', email_recipients: ['a@example.com'],
        format: 'csv' as const, subject: '', sql: 'SELECT 1', explanation: 'one', enabled: true, missed: 'once' as const,
      };
      const daily = await s.schedules.create({ ...base, name: 'Daily', owner_user: 'alice', owner: 't:alice-token', scope: 't:alice-token' });
      t.match(daily, { name: 'Daily', owner: 't:alice-token', scope: 't:alice-token', tables: ['orders'], email_recipients: ['a@example.com'], enabled: true });
      t.ok(daily.id && daily.created_at === daily.updated_at, 'an id and times assigned');
      t.equal(daily.fired_through, undefined, 'nothing fired yet');
      t.match(daily, { own_timezone: 'Europe/Berlin', timezone: 'Europe/Berlin' }, 'its own zone is the zone in effect');
      // no zone of its own: the zone in effect is the repository's default at each read
      const floating = await s.schedules.create({ ...base, own_timezone: null, name: 'Floating', owner_user: 'carol', owner: 'a:carol' });
      t.match(floating, { own_timezone: null, timezone: 'UTC' }, 'UTC until the default is set');
      s.schedules.defaultZone = () => 'America/New_York';
      t.match(await s.schedules.get(floating.id), { own_timezone: null, timezone: 'America/New_York' }, 'the default as it is now');
      t.match(await s.schedules.get(daily.id), { timezone: 'Europe/Berlin' }, 'an own zone is kept');
      t.match(await s.schedules.update(floating.id, { own_timezone: 'Asia/Tokyo' }), { own_timezone: 'Asia/Tokyo', timezone: 'Asia/Tokyo' });
      t.match(await s.schedules.update(floating.id, { own_timezone: null }), { own_timezone: null, timezone: 'America/New_York' }, 'null drops it');
      t.match(await s.schedules.update(floating.id, { cron: '0 8 * * *' }), { own_timezone: null }, 'another change leaves it');
      t.equal(await s.schedules.delete(floating.id), true);
      const err = await rejects(s.schedules.create({ ...base, name: 'Daily', owner_user: 'alice', owner: 't:alice-token' }));
      t.equal(err.code, 'CONFLICT', 'one name per owner');
      t.match(err.message, /name/);
      const bobs = await s.schedules.create({ ...base, name: 'Daily', owner_user: 'bob', owner: 'a:bob' });
      const admins = await s.schedules.create({ ...base, name: 'Daily', owner_user: 'admin', enabled: false });
      t.equal((await rejects(s.schedules.create({ ...base, name: 'Daily', owner_user: 'admin' }))).code, 'CONFLICT', 'an admin\'s (no owner string) by user name');
      t.same((await s.schedules.list()).map((x) => x.id), [daily.id, bobs.id, admins.id], 'in creation order');
      t.same((await s.schedules.list({ ownerKey: 't:alice-token' })).map((x) => x.id), [daily.id], 'by owner');
      t.same((await s.schedules.list({ ownerKey: '~admin' })).map((x) => x.id), [admins.id], 'an admin\'s by ~user');
      t.same((await s.schedules.list({ enabledOnly: true })).map((x) => x.id), [daily.id, bobs.id], 'enabled only');

      const changed = await s.schedules.update(daily.id, { cron: '*/5 * * * *', email_recipients: ['b@example.com', 'c@example.com'], enabled: false });
      t.match(changed, { cron: '*/5 * * * *', email_recipients: ['b@example.com', 'c@example.com'], enabled: false, name: 'Daily', sql: 'SELECT 1' });
      t.equal((await rejects(s.schedules.update(daily.id, { name: 'Other' }).then(() => s.schedules.create({ ...base, name: 'Other', owner_user: 'alice', owner: 't:alice-token' })))).code, 'CONFLICT', 'renamed, the new name is taken');
      t.equal((await rejects(s.schedules.update(bobs.id, { name: 'Daily' }).then(() => s.schedules.update(bobs.id, { name: 'x' })).then(() => s.schedules.create({ ...base, name: 'x', owner_user: 'bob', owner: 'a:bob' })))).code, 'CONFLICT');
      t.equal(await s.schedules.update('nope', { name: 'y' }), undefined, 'no such schedule');
      const got = await s.schedules.get(daily.id);
      got!.tables.push('changed');
      t.same((await s.schedules.get(daily.id))?.tables, ['orders'], 'a returned record is a copy');

      // fired_through moves forward only
      t.equal(await s.schedules.advance(daily.id, '2026-01-05T09:00:00+01:00'), true);
      t.equal(await s.schedules.advance(daily.id, '2026-01-05T07:00:00Z'), false, 'not backwards');
      t.equal(await s.schedules.advance(daily.id, '2026-01-05T08:00:00Z'), false, 'not to the same instant');
      t.equal((await s.schedules.get(daily.id))?.fired_through, '2026-01-05T08:00:00.000Z');
      t.equal(await s.schedules.advance('nope', '2026-01-05T08:00:00Z'), false);

      // executions: once per tick, whoever tries
      const tickAt = '2026-01-05T09:00:00+01:00';
      const tries = await Promise.all(Array.from({ length: 5 }, () => s.executions.enqueue({ schedule_id: daily.id, schedule_name: 'Daily', execution_time: tickAt, trigger: 'cron' })));
      const won = tries.filter((x) => x !== undefined);
      t.equal(won.length, 1, 'five concurrent tries of one tick: one execution');
      const first = won[0]!;
      t.match(first, { schedule_id: daily.id, schedule_name: 'Daily', execution_time: '2026-01-05T08:00:00.000Z', trigger: 'cron', status: 'queued', success: false, email_sent: false, email_error: null, error_message: null, rows_returned: null, duration_ms: null });
      t.equal(await s.executions.enqueue({ schedule_id: daily.id, schedule_name: 'Daily', execution_time: '2026-01-05T08:00:00Z', trigger: 'recovery' }), undefined, 'the same instant written in UTC, as recovery: refused too');
      const manual1 = await s.executions.enqueue({ schedule_id: daily.id, schedule_name: 'Daily', execution_time: '2026-01-05T08:00:00Z', trigger: 'manual' });
      const manual2 = await s.executions.enqueue({ schedule_id: daily.id, schedule_name: 'Daily', execution_time: '2026-01-05T08:00:00Z', trigger: 'manual' });
      t.ok(manual1 && manual2 && manual1.id !== manual2.id, 'Run Now is never refused');
      t.equal(await s.executions.enqueue({ schedule_id: 'nope', schedule_name: 'x', execution_time: tickAt, trigger: 'cron' }), undefined, 'no such schedule: nothing queued');

      const running = await s.executions.markRunning(first.id, '2026-01-05T08:00:01Z');
      t.match(running, { status: 'running', started_at: '2026-01-05T08:00:01.000Z' });
      const done = await s.executions.markDone(first.id, {
        success: true, email_sent: true, email_error: null, error_message: null, rows_returned: 42, duration_ms: 1234.5,
        attachment: { filename: 'Daily.csv', bytes: 100, sent: true }, finished_at: '2026-01-05T08:00:02Z',
      });
      t.match(done, { status: 'done', success: true, email_sent: true, rows_returned: 42, duration_ms: 1234.5, finished_at: '2026-01-05T08:00:02.000Z', attachment: { filename: 'Daily.csv', bytes: 100, sent: true } });
      t.equal(await s.executions.markRunning(first.id), undefined, 'a finished run does not start again');
      t.same(await s.executions.get(first.id), done, 'read back as marked');
      t.equal(await s.executions.markDone('nope', { success: false, email_sent: false, email_error: null, error_message: 'x', rows_returned: null, duration_ms: null }), undefined);

      const later = await s.executions.enqueue({ schedule_id: daily.id, schedule_name: 'Daily', execution_time: '2026-01-06T08:00:00Z', trigger: 'cron' });
      const history = await s.executions.list(daily.id);
      t.same(history.map((e) => e.id), [later!.id, manual2!.id, manual1!.id, first.id], 'newest first (then the later one of a tie)');
      t.same((await s.executions.list(daily.id, { limit: 2, offset: 1 })).map((e) => e.id), [manual2!.id, manual1!.id], 'paged');
      const last = await s.executions.lastDone([daily.id, bobs.id]);
      t.equal(last.get(daily.id)?.id, first.id, 'the newest finished run');
      t.notOk(last.has(bobs.id), 'none for a schedule that never ran');

      // retention: older than N days, and beyond M per schedule, finished ones only
      for (const id of [manual1!.id, manual2!.id]) {
        await s.executions.markDone(id, { success: false, email_sent: false, email_error: 'auth failed', error_message: 'boom', rows_returned: null, duration_ms: 5 });
      }
      await s.executions.markDone(manual2!.id, { success: false, email_sent: false, email_error: null, error_message: 'the table is gone', rows_returned: null, duration_ms: 5, drift: true });
      t.equal((await s.executions.get(manual2!.id))?.drift, true, 'a drift is recorded');
      t.notOk('drift' in (await s.executions.get(manual1!.id) as object), 'and absent otherwise');
      const old = await s.executions.enqueue({ schedule_id: bobs.id, schedule_name: 'Daily', execution_time: '2025-01-01T00:00:00Z', trigger: 'cron' });
      await s.executions.markDone(old!.id, { success: true, email_sent: false, email_error: null, error_message: null, rows_returned: 0, duration_ms: 1 });
      const oldQueued = await s.executions.enqueue({ schedule_id: bobs.id, schedule_name: 'Daily', execution_time: '2025-01-02T00:00:00Z', trigger: 'cron' });
      const pruned = await s.executions.prune(30, 2, new Date('2026-01-07T00:00:00Z'));
      t.equal(pruned, 2, 'the old finished run, and the third finished run of a schedule kept to two');
      t.same((await s.executions.list(daily.id)).map((e) => e.id), [later!.id, manual2!.id, manual1!.id], 'queued runs are kept whatever their rank');
      t.same((await s.executions.list(bobs.id)).map((e) => e.id), [oldQueued!.id], 'an old run still queued is kept');
      // a run still queued long after it was recorded: failed with the message (prune then counts it as finished)
      t.equal(await s.executions.failStale(new Date(Date.now() - 60_000), 'never ran'), 0, 'runs recorded a moment ago are not stale');
      t.equal(await s.executions.failStale(new Date(Date.now() + 1_000), 'never ran', new Date('2026-01-07T00:00:00Z')), 2, 'the two queued runs are');
      t.match(await s.executions.get(oldQueued!.id), { status: 'done', success: false, error_message: 'never ran', finished_at: '2026-01-07T00:00:00.000Z' });
      t.equal((await s.executions.get(later!.id))?.status, 'done');

      // delete: the history goes with it
      t.equal(await s.schedules.delete(daily.id), true);
      t.equal(await s.schedules.get(daily.id), undefined);
      t.same(await s.executions.list(daily.id), [], 'its executions are gone');
      t.equal(await s.executions.get(first.id), undefined);
      t.equal(await s.schedules.delete(daily.id), false, 'twice: nothing to delete');
      t.equal(await s.executions.deleteFor(bobs.id), 1);
    });

    t.test('audit: dedup by event id', async (t) => {
      const s = await fresh();
      t.equal(await s.audit.append(event('e1')), true);
      t.equal(await s.audit.append(event('e1', { type: 'other', payload: { changed: true } })), false, 'the second append is refused');
      const r = await s.audit.query({});
      t.equal(r.total, 1);
      t.same(r.entries, [event('e1')], 'the first one is kept, whole');
      t.notOk('user' in (r.entries[0] as object), 'absent optional fields stay absent');

      // at-least-once delivery racing with itself: many appends of the same id at once
      const results = await Promise.all(Array.from({ length: 8 }, () => s.audit.append(event('e2'))));
      t.equal(results.filter(Boolean).length, 1, 'exactly one concurrent append wins');
      t.equal((await s.audit.query({})).total, 2);
    });

    t.test('audit: filters, newest first, paging, total', async (t) => {
      const s = await fresh();
      const minute = (m: number) => new Date(Date.UTC(2024, 4, 1, 10, m)).toISOString();
      const users = ['alice', 'bob', 'carol'];
      for (let i = 0; i < 30; i++) {
        await s.audit.append({
          event_id: `ev-${i}`,
          type: i % 3 === 0 ? 'query.rejected' : 'query.executed',
          ts: minute(i),
          request_id: `req-${Math.floor(i / 2)}`,
          user: users[i % 3] as string,
          channel: i % 2 ? 'web' : 'mcp',
          code: i % 5 === 0 ? 'SQL_REJECTED' : 'OK',
          payload: { i, nested: { list: [1, 'two', null] } },
        });
      }
      // two events in the same instant: arrival order breaks the tie (the later first)
      await s.audit.append(event('same-a', { ts: minute(40) }));
      await s.audit.append(event('same-b', { ts: minute(40) }));

      const all = await s.audit.query({ limit: 1000 });
      t.equal(all.total, 32);
      t.same(all.entries.slice(0, 4).map((e) => e.event_id), ['same-b', 'same-a', 'ev-29', 'ev-28'], 'newest first');
      t.same(all.entries[2], {
        event_id: 'ev-29', type: 'query.executed', ts: minute(29), request_id: 'req-14', user: 'carol', channel: 'web', code: 'OK',
        payload: { i: 29, nested: { list: [1, 'two', null] } },
      }, 'every field back as written');

      const def = await s.audit.query({});
      t.equal(def.entries.length, 32, 'default page of 50 holds all');

      const byType = await s.audit.query({ type: 'query.rejected' });
      t.equal(byType.total, 10);
      t.ok(byType.entries.every((e) => e.type === 'query.rejected'));

      const byUser = await s.audit.query({ user: 'bob' });
      t.same(byUser.entries.map((e) => e.event_id), ['ev-28', 'ev-25', 'ev-22', 'ev-19', 'ev-16', 'ev-13', 'ev-10', 'ev-7', 'ev-4', 'ev-1']);

      const byCode = await s.audit.query({ code: 'SQL_REJECTED' });
      t.same(byCode.entries.map((e) => e.event_id), ['ev-25', 'ev-20', 'ev-15', 'ev-10', 'ev-5', 'ev-0']);

      const byRequest = await s.audit.query({ request_id: 'req-7' });
      t.same(byRequest.entries.map((e) => e.event_id), ['ev-15', 'ev-14']);

      const window = await s.audit.query({ from: minute(10), to: minute(13) });
      t.same(window.entries.map((e) => e.event_id), ['ev-12', 'ev-11', 'ev-10'], 'from inclusive, to exclusive');
      const offsetForm = await s.audit.query({ from: '2024-05-01T12:10:00+02:00', to: '2024-05-01T12:13:00+02:00' });
      t.same(offsetForm.entries.map((e) => e.event_id), ['ev-12', 'ev-11', 'ev-10'], 'times with an offset compare as instants');

      const combined = await s.audit.query({ type: 'query.executed', user: 'bob', code: 'OK', from: minute(10) });
      t.same(combined.entries.map((e) => e.event_id), ['ev-28', 'ev-22', 'ev-19', 'ev-16', 'ev-13'], 'filters combine');

      const p1 = await s.audit.query({ type: 'query.executed', limit: 5 });
      const p2 = await s.audit.query({ type: 'query.executed', limit: 5, offset: 5 });
      const p5 = await s.audit.query({ type: 'query.executed', limit: 5, offset: 20 });
      t.equal(p1.total, 22, 'total counts all matching, not the page');
      t.equal(p2.total, 22);
      t.same(p1.entries.map((e) => e.event_id), ['same-b', 'same-a', 'ev-29', 'ev-28', 'ev-26']);
      t.same(p2.entries.map((e) => e.event_id), ['ev-25', 'ev-23', 'ev-22', 'ev-20', 'ev-19']);
      t.same(p5.entries.map((e) => e.event_id), ['ev-2', 'ev-1']);
      const past = await s.audit.query({ limit: 5, offset: 100 });
      t.same(past, { entries: [], total: 32 }, 'past the end: no entries, the total still told');

      t.equal((await s.audit.query({ limit: 5000 })).entries.length, 32, 'a limit over 1000 is clamped, not refused');
      t.equal((await s.audit.query({ limit: 0 })).entries.length, 1, 'a limit under 1 is 1');
      t.equal((await rejects(s.audit.query({ from: 'yesterday' }))).code, 'VALIDATION_FAILED', 'a bad time is refused');
      t.same(await s.audit.query({ user: 'nobody' }), { entries: [], total: 0 });
    });
  });
}

storeSuite('memory', memoryFactory);
storeSuite('postgresql', postgresFactory);

// ---- PostgreSQL only ----------------------------------------------------------------------

async function tablesOf(url: string): Promise<{ tables: string[]; versions: Array<{ version: number; n: number }> }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const tables = await c.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`);
    const versions = await c.query<{ version: number; n: number }>('SELECT version, count(*)::int AS n FROM cortado_schema_version GROUP BY version ORDER BY version');
    return { tables: tables.rows.map((r) => r.t), versions: versions.rows };
  } finally {
    await c.end();
  }
}

t.test('postgresql: versioned migrations, idempotent and safe with concurrent starts', async (t) => {
  const db = await createTestDb('store_mig');
  dbs.push(db);
  // four processes starting at once on an empty database
  const stores = Array.from({ length: 4 }, () => postgresStorage(pgOptions(db)));
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  await Promise.all(stores.map((s) => s.init()));

  const after = await tablesOf(db.url);
  t.same(after.tables, [
    'cortado_alarms', 'cortado_api_tokens', 'cortado_audit_log', 'cortado_config_override_history', 'cortado_config_overrides', 'cortado_dashboards', 'cortado_history',
    'cortado_mask_rules', 'cortado_schedule_executions', 'cortado_schedules', 'cortado_schema_version', 'cortado_semantic_columns', 'cortado_semantic_entities',
    'cortado_semantic_metrics', 'cortado_semantic_relationships',
  ], 'every table, prefixed');
  t.same(after.versions, MIGRATIONS.map((m) => ({ version: m.version, n: 1 })), 'each migration recorded once');

  await stores[0]?.init();
  await stores[1]?.init();
  t.same(await tablesOf(db.url), after, 'init again changes nothing');

  const idx = await db.pool.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE tablename IN ('cortado_audit_log', 'cortado_api_tokens')`);
  const defs = idx.rows.map((r) => r.indexdef).join('\n');
  for (const col of ['(event_id)', '(ts DESC, seq DESC)', '(type, ts DESC)', '(username, ts DESC)', '(request_id)']) {
    t.ok(defs.includes(`cortado_audit_log USING btree ${col}`), `audit log indexed on ${col}`);
  }
  t.match(defs, /CREATE UNIQUE INDEX \S+ ON public\.cortado_api_tokens USING btree \(hash\)/, 'token hash unique and indexed');

  // the store works on the migrated tables from every process
  t.equal(await stores[2]?.audit.append(event('x')), true);
  t.equal(await stores[3]?.audit.append(event('x')), false, 'dedup across processes');
});

t.test('postgresql: a later migration runs once, and a failing one leaves nothing behind', async (t) => {
  const db = await createTestDb('store_mig2');
  dbs.push(db);
  await migrate(db.pool, log);
  const next = [...MIGRATIONS, { version: 1000, name: 'extra table', sql: 'CREATE TABLE cortado_test_extra (x integer)' }];
  const runs = await Promise.all([migrate(db.pool, log, next), migrate(db.pool, log, next), migrate(db.pool, log, next)]);
  t.same(runs.map((r) => r.join(',')).sort(), ['', '', '1000'], 'exactly one start applied it');
  t.same((await tablesOf(db.url)).versions.at(-1), { version: 1000, n: 1 });

  const bad = [...next, { version: 1001, name: 'broken', sql: 'CREATE TABLE cortado_test_half (x integer); SELECT no_such_column FROM cortado_test_half' }];
  const err = await migrate(db.pool, log, bad).then(() => undefined, (e: unknown) => e);
  t.ok(err, 'a failing migration fails the start');
  const after = await tablesOf(db.url);
  t.notOk(after.tables.includes('cortado_test_half'), 'its first statement was rolled back with it');
  t.notOk(after.versions.some((v) => v.version === 1001), 'and it is not recorded');
});

t.test('postgresql: data survives a new store on the same database', async (t) => {
  const db = await createTestDb('store_keep');
  dbs.push(db);
  const a = postgresStorage(pgOptions(db));
  await a.init();
  await a.overrides.set('query.max_limit', 700, 'alice');
  await a.tokens.insert(token({ id: 'keep', hash: 'h-keep' }));
  const rule = await a.maskRules.create({ field_pattern: '*phone*', strategy: 'partial', description: 'phones' });
  await a.audit.append(event('kept', { user: 'alice', payload: { text: 'nul \u0000 and lone \ud800 survive' } }));
  await a.close();

  const b = postgresStorage(pgOptions(db));
  t.teardown(() => b.close());
  await b.init();
  t.same((await b.overrides.list()).map((o) => [o.key, o.value]), [['query.max_limit', 700]]);
  t.equal((await b.overrides.history()).length, 1);
  t.equal((await b.tokens.findByHash('h-keep'))?.id, 'keep');
  t.same(await b.maskRules.list(), [rule]);
  const audit = await b.audit.query({});
  t.equal(audit.total, 1);
  t.same(audit.entries[0]?.payload, { text: 'nul \ufffd and lone \ufffd survive' }, 'text PostgreSQL cannot hold is replaced, not refused');
  t.equal(await b.audit.append(event('kept')), false, 'dedup holds across instances');
});

t.test('postgresql: what a deployment of an earlier release stored is read back, nothing migrated away', async (t) => {
  // deployments have version 1 applied: its SQL must stay as released, byte for byte
  const v1 = MIGRATIONS.find((m) => m.version === 1);
  t.equal(createHash('sha256').update(v1?.sql ?? '').digest('hex'), '445d0a1651d8bf881518ad6598f1817413604dd56b9ddd1d62b3a3e8317bbeea', 'migration 1 is unchanged');

  const db = await createTestDb('store_compat');
  dbs.push(db);
  // the schema as the release before this storage left it, and rows written the way it wrote them
  await db.pool.query(`CREATE TABLE cortado_schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  await db.pool.query(v1?.sql ?? '');
  await db.pool.query(`INSERT INTO cortado_schema_version (version, name) VALUES (1, 'overrides, tokens, mask rules, audit log')`);
  await db.pool.query(`INSERT INTO cortado_config_overrides (key, value, updated_by, updated_at) VALUES
    ('prompts.sql_generation', '"Old prompt"', 'admin', '2024-01-02T03:04:05Z'),
    ('ldap.bind_password', '{"enc": "gAAAA-old"}', 'admin', '2024-01-02T03:04:05Z'),
    ('query.max_limit', '250', 'admin', '2024-01-02T03:04:05Z')`);
  await db.pool.query(`INSERT INTO cortado_config_override_history (key, old_value, new_value, changed_by, changed_at) VALUES ('query.max_limit', NULL, '250', 'admin', '2024-01-02T03:04:05Z')`);
  await db.pool.query(`INSERT INTO cortado_api_tokens (id, prefix, hash, label, username, db_config, created_at, expires_at) VALUES ('old-tok', 'ctd_old', 'h-old', 'laptop', 'ann', '{}', '2024-01-01T00:00:00Z', '2030-01-01T00:00:00Z')`);
  await db.pool.query(`INSERT INTO cortado_mask_rules (id, field_pattern, strategy, enabled, description, created_at, updated_at) VALUES ('old-rule', '*ssn*', 'redact', true, '', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z')`);
  await db.pool.query(`INSERT INTO cortado_audit_log (event_id, ts, type, username, code, payload) VALUES ('old-ev', '2024-01-01T00:00:00Z', 'identity.login', 'ann', 'OK', '{"ok": true}')`);

  t.same(await migrate(db.pool, log), MIGRATIONS.filter((m) => m.version > 1).map((m) => m.version), 'only the later migrations apply on such a database');
  const s = postgresStorage(pgOptions(db));
  t.teardown(() => s.close());
  await s.init();
  t.same((await s.overrides.list()).map((o) => [o.key, o.value]), [['ldap.bind_password', { enc: 'gAAAA-old' }], ['prompts.sql_generation', 'Old prompt'], ['query.max_limit', 250]]);
  t.same((await s.overrides.history()).map((c) => [c.key, c.new_value]), [['query.max_limit', 250]]);
  t.same((await s.prompts.list()).map((p) => [p.name, p.value, p.updated_at]), [['sql_generation', 'Old prompt', '2024-01-02T03:04:05.000Z']], 'an old prompt override is a prompt');
  t.same((await s.ldap.list()).map((x) => [x.name, x.value]), [['bind_password', { enc: 'gAAAA-old' }]], 'an old LDAP override is an LDAP setting');
  t.equal((await s.tokens.findByHash('h-old'))?.username, 'ann');
  t.same((await s.maskRules.list()).map((r) => [r.id, r.field_pattern, r.strategy]), [['old-rule', '*ssn*', 'redact']]);
  t.match((await s.audit.query({})).entries, [{ event_id: 'old-ev', type: 'identity.login', user: 'ann', code: 'OK', payload: { ok: true } }]);
  const after = await tablesOf(db.url);
  t.same(after.versions, MIGRATIONS.map((m) => ({ version: m.version, n: 1 })), 'each migration recorded once');
});

t.test('postgresql: a config_db out of reach is DB_UNAVAILABLE, naming config_db, never the password', async (t) => {
  const password = 'Sup3r-s3cret-pw';
  const down = postgresStorage({ host: '127.0.0.1', port: 1, database: 'cortado', user: 'cortado', password, log, connectTimeoutMs: 2_000 });
  const e1 = await rejects(down.init());
  await down.close();
  t.equal(e1.code, 'DB_UNAVAILABLE');
  t.match(e1.message, /config_db/);
  t.match(e1.message, /127\.0\.0\.1:1/);
  t.notMatch(e1.message, password);
  t.notMatch(JSON.stringify(e1.toWire()), password);

  const db = await createTestDb('store_down');
  dbs.push(db);
  const missing = postgresStorage({ ...pgOptions(db), database: `${db.name}_missing`, password });
  const e2 = await rejects(missing.overrides.list());
  await missing.close();
  t.equal(e2.code, 'DB_UNAVAILABLE');
  t.match(e2.message, /config_db.*the database does not exist/);
  t.notMatch(e2.message, password);
});

// ---- memory only --------------------------------------------------------------------------

t.test('memory: the audit log keeps the newest 10,000 entries, and dedups what it keeps', async (t) => {
  t.equal(MEMORY_AUDIT_CAP, 10_000);
  const s = memoryStorage();
  const base = Date.UTC(2024, 0, 1);
  for (let i = 0; i < MEMORY_AUDIT_CAP + 50; i++) {
    await s.audit.append({ event_id: `m-${i}`, type: 'query.executed', ts: new Date(base + i * 1000).toISOString(), payload: {} });
  }
  const all = await s.audit.query({ limit: 1 });
  t.equal(all.total, MEMORY_AUDIT_CAP, 'total counts what is kept');
  t.equal(all.entries[0]?.event_id, `m-${MEMORY_AUDIT_CAP + 49}`, 'the newest is first');
  const oldest = await s.audit.query({ limit: 1, offset: MEMORY_AUDIT_CAP - 1 });
  t.equal(oldest.entries[0]?.event_id, 'm-50', 'the 50 oldest were dropped');
  t.equal(await s.audit.append({ event_id: 'm-100', type: 'x', ts: new Date().toISOString(), payload: {} }), false, 'a kept id is still a duplicate');
  t.equal((await s.audit.query({ type: 'x' })).total, 0);

  const small = memoryStorage({ auditCap: 3 });
  for (const id of ['a', 'b', 'c', 'd']) await small.audit.append(event(id));
  t.same((await small.audit.query({})).entries.map((e) => e.event_id), ['d', 'c', 'b'], 'a smaller cap works the same');
  t.equal(await small.audit.append(event('a')), true, 'a dropped id is forgotten with its entry (the dedup set is bounded too)');
});

// ---- openStorage ----------------------------------------------------------------------------

t.test('openStorage chooses by config_db.enabled', async (t) => {
  const cfg = (enabled: boolean, pgc: { host: string; port: number; database: string; user: string; password: string }) => ({
    config_db: { enabled, type: 'postgresql' as const, postgresql: pgc, encryption_key: '' },
  });
  const off = await openStorage(cfg(false, { host: '127.0.0.1', port: 1, database: 'x', user: 'x', password: '' }), log);
  t.equal(off.kind, 'memory', 'off: memory, nothing to reach');
  await off.close();

  const db = await createTestDb('store_open');
  dbs.push(db);
  const on = await openStorage(cfg(true, { host: db.host, port: db.port, database: db.name, user: db.user, password: '' }), log);
  t.teardown(() => on.close());
  t.equal(on.kind, 'postgresql');
  await on.overrides.set('k', 1, 'me');
  t.same((await db.pool.query('SELECT key, value FROM cortado_config_overrides')).rows, [{ key: 'k', value: 1 }], 'tables created before it returned');

  const password = 'An0ther-secret';
  const err = await rejects(openStorage(cfg(true, { host: '127.0.0.1', port: 1, database: 'x', user: 'x', password }), log));
  t.equal(err.code, 'DB_UNAVAILABLE');
  t.match(err.message, /config_db/);
  t.notMatch(err.message, password);
});

t.test('postgresql: a closed store fails as unavailable, not as an internal error', async (t) => {
  const db = await createTestDb('store_closed');
  dbs.push(db);
  const s = postgresStorage(pgOptions(db));
  await s.init();
  await s.close();
  await s.close();
  t.equal((await rejects(s.tokens.list())).code, 'DB_UNAVAILABLE');
});
