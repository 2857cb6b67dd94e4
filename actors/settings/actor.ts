/**
 * The settings actor: runtime config overrides (with their history), prompts, mask rules and
 * LDAP settings, over the bus. At start it opens the storage (config_db or memory) and applies
 * the stored overrides to this process's config; every other process gets them from it
 * (`config.stored` at start, the `config.changed` event after: cli/config-sync.ts).
 *
 * Its subjects keep the names they had when the identity actor served them (identity.config.*,
 * identity.prompts.list, identity.mask.*, identity.ldap.* under the prefix), so no client
 * changes: only the queue group that answers them is `settings` now (protocol/subjects.ts).
 */
import {
  Actor, ConfigHistory, ConfigReset, ConfigStored, ConfigUpdate, ConfigView, LdapTest, LdapUpdate, LdapView, MaskRuleCreate,
  MaskRuleDelete, MaskRuleUpdate, MaskRulesList, PromptsList,
} from '../../protocol/subjects.js';
import { openStorage } from '../../store/index.js';
import { createSecretBox } from '../lib/secrets.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import * as h from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const store = await openStorage(config, log);
  try {
    const d: h.SettingsDeps = { bus, config, log, store, box: createSecretBox(config) };
    const applied = await h.applyStoredOverrides(d);
    if (applied) log.info({ overrides: applied }, 'runtime config overrides applied');

    bus.serve(ConfigView, () => h.configView(d));
    bus.serve(ConfigUpdate, (input, ctx) => h.configUpdate(input, d, ctx));
    bus.serve(ConfigReset, (input, ctx) => h.configReset(input, d, ctx));
    bus.serve(ConfigHistory, (input) => h.configHistory(input, d));
    bus.serve(ConfigStored, () => h.configStored(d));
    bus.serve(PromptsList, () => h.promptsList(d));
    bus.serve(MaskRulesList, () => h.maskList(d));
    bus.serve(MaskRuleCreate, (input, ctx) => h.maskCreate(input, d, ctx));
    bus.serve(MaskRuleUpdate, (input, ctx) => h.maskUpdate(input, d, ctx));
    bus.serve(MaskRuleDelete, (input, ctx) => h.maskDelete(input, d, ctx));
    bus.serve(LdapView, async () => h.ldapView(d));
    bus.serve(LdapUpdate, (input, ctx) => h.ldapUpdate(input, d, ctx));
    bus.serve(LdapTest, (input) => h.ldapTest(input, d));
    log.info({ store: store.kind }, 'settings ready');
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { name: Actor.Settings, stop: () => store.close() };
}
