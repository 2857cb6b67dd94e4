/**
 * The settings actor on its own, over a real bus and config_db: it answers the runtime config,
 * prompts, mask rule and LDAP subjects (their `identity.` names kept) while logins stay the
 * identity actor's; a change is checked, sealed, stored, applied and announced; a settings actor
 * started later applies what was stored.
 */
import t from 'tap';
import { Bus } from '../../runtime/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import { createLogger } from '../../runtime/log.js';
import {
  Actor, ConfigChangedEvt, ConfigHistory, ConfigReset, ConfigUpdate, ConfigView, IdentityLogin, LdapUpdate, LdapView, MaskRuleCreate,
  FORMER_NAMES, MaskRuleDelete, MaskRulesList, MaskRuleUpdate, PromptsList, REQUESTS,
} from '../../protocol/subjects.js';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { start as startSettings } from '../../actors/settings/actor.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

const log = createLogger({ svc: 'test', level: 'silent' });
const nats = await startNats();
const cfgDb = await createTestDb('settings');
const extra = {
  config_db: { enabled: true, encryption_key: generateFernetKey(), postgresql: { host: cfgDb.host, port: cfgDb.port, database: cfgDb.name, user: cfgDb.user } },
};
const bus = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'settings', log, strict: true });
await bus.ensureEventStream();
const client = await Bus.connect({ url: nats.url, prefix: 'cortado', name: 'client', log, strict: true });
const config = testConfig({ natsUrl: nats.url, extra });
let settings = await startSettings({ bus, config, log });
const ctx = { requestId: 'settings-test' };

t.teardown(async () => {
  await bus.stopServing([Actor.Settings], Date.now() + 2_000);
  await settings.stop();
  await client.close();
  await bus.close();
  await cfgDb.drop();
  await nats.stop();
});

async function refusal(p: Promise<unknown>): Promise<CortadoError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof CortadoError)) throw new Error(`expected a CortadoError, got ${String(err)}`);
  return err;
}

t.test('the settings subjects are named after the settings actor, and served under their former identity. names too', async (t) => {
  const mine = REQUESTS.filter((r) => r.owner === Actor.Settings).map((r) => r.subject).sort();
  const names = [
    'config.history', 'config.reset', 'config.stored', 'config.update', 'config.view',
    'ldap.test', 'ldap.update', 'ldap.view',
    'mask.create', 'mask.delete', 'mask.list', 'mask.update', 'prompts.list',
  ];
  t.same(mine, names.map((n) => `settings.${n}`));
  t.ok(REQUESTS.filter((r) => r.owner === Actor.Identity).every((r) => !mine.includes(r.subject)), 'identity serves none of them');
  t.same([...FORMER_NAMES.values()].map((r) => r.subject).sort(), names.map((n) => `identity.${n}`), 'each has its former name, until its removal');

  // a process of the former release asks under the old name: the same actor answers the same
  for (const [current, former] of FORMER_NAMES) {
    if (current.subject !== ConfigView.subject && current.subject !== PromptsList.subject && current.subject !== MaskRulesList.subject) continue;
    t.same(await client.request(former as typeof ConfigView, {}, ctx), await client.request(current as typeof ConfigView, {}, ctx), `${former.subject} answers as ${current.subject}`);
  }

  const view = await client.request(ConfigView, {}, ctx);
  t.equal(view.persistent, true, 'answered by the settings actor alone, on config_db');
  const login = await refusal(client.request(IdentityLogin, { kind: 'admin', username: 'admin', password: 'x', client: '127.0.0.1' }, ctx));
  t.equal(login.code, 'ACTOR_UNAVAILABLE', 'a login needs the identity actor, which is not running here');
});

t.test('a change is checked, sealed, stored, applied and announced', async (t) => {
  const seen: Array<{ key: string; value?: unknown; reset: boolean }> = [];
  const unlisten = client.listen(ConfigChangedEvt.subject, (data) => seen.push(data as (typeof seen)[number]));
  t.teardown(unlisten);

  const r = await client.request(ConfigUpdate, { key: 'query.max_limit', value: 321, by: 'ann' }, ctx);
  t.same(r, { key: 'query.max_limit', value: 321 });
  t.equal(config.query.max_limit, 321, 'applied to this process');
  t.equal((await refusal(client.request(ConfigUpdate, { key: 'query.max_limit', value: -5, by: 'ann' }, ctx))).code, 'VALIDATION_FAILED', 'checked against the schema');

  await client.request(ConfigUpdate, { key: 'prompts.sql_generation', value: 'Write careful SQL.', by: 'ann' }, ctx);
  const prompts = await client.request(PromptsList, {}, ctx);
  t.match(prompts.prompts.find((p) => p.key === 'sql_generation'), { text: 'Write careful SQL.', source: 'override' }, 'a prompt set as config is an override');

  const ldap = await client.request(LdapUpdate, { settings: { server: 'ldap://dir.example:389', bind_password: 'S3cret-bind' }, by: 'ann' }, ctx);
  t.equal(ldap.settings.bind_password, '********', 'the secret is never shown');
  t.equal(config.ldap.bind_password, 'S3cret-bind', 'applied in the clear to this process');
  const rows = await cfgDb.pool.query<{ key: string; value: unknown }>("SELECT key, value FROM cortado_config_overrides WHERE key LIKE 'ldap.%' ORDER BY key");
  t.same(rows.rows.map((x) => x.key), ['ldap.bind_password', 'ldap.server']);
  t.match(rows.rows[0]?.value, { enc: /^gAAAA/ }, 'stored sealed');
  t.notMatch(JSON.stringify(rows.rows), 'S3cret-bind');
  t.equal((await client.request(LdapUpdate, { settings: { bind_password: '********' }, by: 'bob' }, ctx)).settings.bind_password, '********');
  t.equal(config.ldap.bind_password, 'S3cret-bind', 'the placeholder sent back keeps the stored secret');
  t.same((await client.request(LdapView, {}, ctx)).settings.server, 'ldap://dir.example:389');

  const history = await client.request(ConfigHistory, { key: 'ldap.bind_password' }, ctx);
  t.same(history.changes.map((c) => [c.changed_by, c.new_value]), [['ann', '********']], 'one change, its value masked');

  await client.request(ConfigReset, { key: 'query.max_limit', by: 'bob' }, ctx);
  t.equal(config.query.max_limit, 1000, 'reset to the file value');

  const deadline = Date.now() + 5_000;
  while (seen.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.same(seen.map((e) => [e.key, e.reset]), [
    ['query.max_limit', false], ['prompts.sql_generation', false], ['ldap.server', false], ['ldap.bind_password', false], ['query.max_limit', true],
  ], 'every change announced, for the other processes');
  t.match(seen[3]?.value, { enc: /^gAAAA/ }, 'a secret travels sealed');
});

t.test('mask rules: created, listed, changed, removed; a bad pattern refused', async (t) => {
  const rule = await client.request(MaskRuleCreate, { field_pattern: '*email*', strategy: 'partial' }, ctx);
  t.match((await client.request(MaskRulesList, {}, ctx)).rules, [{ id: rule.id, field_pattern: '*email*', enabled: true }]);
  t.match(await client.request(MaskRuleUpdate, { id: rule.id, enabled: false }, ctx), { id: rule.id, enabled: false });
  t.equal((await refusal(client.request(MaskRuleCreate, { field_pattern: 'a b', strategy: 'hash' }, ctx))).code, 'VALIDATION_FAILED');
  t.same(await client.request(MaskRuleDelete, { id: rule.id }, ctx), { ok: true });
  t.equal((await refusal(client.request(MaskRuleDelete, { id: rule.id }, ctx))).code, 'NOT_FOUND');
});

t.test('a settings actor started later applies what was stored', async (t) => {
  await client.request(ConfigUpdate, { key: 'insights.max_insights', value: 2, by: 'ann' }, ctx);
  await bus.stopServing([Actor.Settings], Date.now() + 2_000);
  await settings.stop();
  const fresh = testConfig({ natsUrl: nats.url, extra });
  t.equal(fresh.insights.max_insights, 3, 'the file value before');
  settings = await startSettings({ bus, config: fresh, log });
  t.equal(fresh.insights.max_insights, 2, 'the stored override, applied at start');
  t.equal(fresh.ldap.bind_password, 'S3cret-bind', 'a stored secret opened with the key');
  t.equal(fresh.prompts.sql_generation, 'Write careful SQL.');
});
