/**
 * Identity pieces on their own: sessions expire, lockouts count per client and per user and
 * end after their window (on a real JetStream KV); runtime config rules.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { Bucket } from '../../protocol/subjects.js';
import { applyOverride, checkOverride, maskSecrets, overridable, schemaHasKey } from '../../config/runtime.js';
import { Lockouts, LOCKOUT, SessionStore, type SessionsBucketValue } from '../../actors/identity/sessions.js';
import { safeEqual } from '../../actors/identity/handle.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';

const nats = await startNats();
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'idt', log: createLogger({ svc: 'test', level: 'silent' }) });
t.teardown(async () => {
  await bus.close();
  await nats.stop();
});
const kv = await bus.bucket<SessionsBucketValue>(Bucket.Sessions, { ttlMs: 3_600_000 });

t.test('a session expires, is bound to its kind, and is gone after logout', async (t) => {
  const sessions = new SessionStore(kv);
  const now = Date.parse('2026-11-23T10:00:00Z');
  const { token, session } = await sessions.create({ username: 'ann', kind: 'admin', source: 'local' }, 60_000, now);
  t.equal(session.expires_at, '2026-11-23T10:01:00.000Z');
  t.ok(session.csrf.length >= 30, 'a CSRF token');
  t.ok(await sessions.get(token, 'admin', now + 59_000), 'valid before its end');
  t.notOk(await sessions.get(token, 'admin', now + 60_001), 'expired after');
  t.notOk(await sessions.get(token, 'assistant', now), 'not a session of the other kind');
  t.notOk(await sessions.get(`${token}x`, 'admin', now), 'another secret is no session');
  const all = await kv.keys();
  t.notOk(all.some((k) => k.includes(token)), 'the secret is not a key (only its hash)');
  await sessions.remove(token);
  t.notOk(await sessions.get(token, 'admin', now));
});

t.test('lockout: per client and user, per user overall, and over after the window', async (t) => {
  const l = new Lockouts(kv);
  const now = Date.parse('2026-11-23T10:00:00Z');
  for (let i = 0; i < LOCKOUT.perClient - 1; i++) await l.fail('admin', 'bob', '10.0.0.1', now);
  t.equal(await l.lockedFor('admin', 'bob', '10.0.0.1', now), 0, 'not yet');
  await l.fail('admin', 'Bob', '10.0.0.1', now);
  t.ok((await l.lockedFor('admin', 'bob', '10.0.0.1', now)) > 0, 'locked (names compared case-insensitively)');
  t.equal(await l.lockedFor('admin', 'bob', '10.0.0.2', now), 0, 'another address is not locked by these');
  t.equal(await l.lockedFor('admin', 'bob', '10.0.0.1', now + LOCKOUT.windowMs + 1), 0, 'over after the window');
  for (let i = 0; i < LOCKOUT.perUser; i++) await l.fail('admin', 'carol', `10.1.0.${i}`, now);
  t.ok((await l.lockedFor('admin', 'carol', '10.9.9.9', now)) > 0, 'many addresses lock the user everywhere');
});

t.test('runtime config rules', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
  t.ok(schemaHasKey('query.max_limit'));
  t.ok(schemaHasKey('prompts.sql_generation'));
  t.notOk(schemaHasKey('prompts.nope'));
  t.notOk(schemaHasKey('query.max_limit.x'));
  t.notOk(overridable('config_db.encryption_key'));
  t.notOk(overridable('admin.password'));
  t.notOk(overridable('database.postgresql.host'));
  t.ok(overridable('ldap.server'));
  t.throws(() => checkOverride(config, 'query.max_limit', -1), { code: 'VALIDATION_FAILED' });
  t.throws(() => checkOverride(config, 'bus.url', 'nats://x'), { code: 'FORBIDDEN' });
  // the scheduler reads these once, at start (the leader, the work queue's consumer): a change
  // at run time would be accepted and do nothing, so it is refused
  t.throws(() => checkOverride(config, 'scheduler.enabled', true), { code: 'FORBIDDEN' });
  t.throws(() => checkOverride(config, 'scheduler.max_concurrent_jobs', 3), { code: 'FORBIDDEN' });
  checkOverride(config, 'scheduler.timezone', 'Europe/Berlin');
  checkOverride(config, 'insights.max_insights', 2);
  applyOverride(config, 'insights.max_insights', 2);
  t.equal(config.insights.max_insights, 2);
  applyOverride(config, 'insights.max_insights', undefined);
  t.equal(config.insights.max_insights, 3, 'reset to the file value');
  const masked = maskSecrets({ a: { password: 'x', api_key: '', token: { enc: 'y' } }, b: 'password' });
  t.same(masked, { a: { password: '********', api_key: '', token: '********' }, b: 'password' });
  t.ok(safeEqual('abc', 'abc'));
  t.notOk(safeEqual('abc', 'abd'));
  t.notOk(safeEqual('abc', 'abcd'));
});
