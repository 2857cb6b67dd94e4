/**
 * The settings actor: runtime config overrides (with their history), prompts, mask rules and
 * LDAP settings, over the bus. At start it opens the storage (config_db or memory) and applies
 * the stored overrides to this process's config; every other process gets them from it
 * (`config.stored` at start, the `config.changed` event after: cli/config-sync.ts).
 *
 * Its subjects are `settings.*`. Each is also served under the `identity.` name it had when the
 * identity actor owned it (protocol/subjects.ts FORMER_NAMES, deprecated, removed in release
 * FORMER_SETTINGS_NAMES_REMOVED_IN), so a process of an older release still gets its answer
 * during a rolling upgrade.
 */
import type { Bus, Handler } from '../../runtime/bus.js';
import type { RequestDef } from '../../protocol/define.js';
import {
  Actor, ConfigHistory, ConfigReset, ConfigStored, ConfigUpdate, ConfigView, FORMER_NAMES, LdapTest, LdapUpdate, LdapView, MaskRuleCreate,
  MaskRuleDelete, MaskRuleUpdate, MaskRulesList, PromptsList,
} from '../../protocol/subjects.js';
import { openStorage } from '../../store/index.js';
import { createSecretBox } from '../lib/crypto/secrets.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import * as h from './handle.js';

/** Serves `def`, and the same handler under the def's former name while it has one. */
function servingFormerNames(bus: Bus): <D extends RequestDef>(def: D, handler: Handler<D>) => void {
  return (def, handler) => {
    bus.serve(def, handler);
    const former = FORMER_NAMES.get(def);
    if (former) bus.serve(former as typeof def, handler);
  };
}

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const serve = servingFormerNames(bus);
  const store = await openStorage(config, log);
  try {
    const d: h.SettingsDeps = { bus, config, log, store, box: createSecretBox(config) };
    const applied = await h.applyStoredOverrides(d);
    if (applied) log.info({ overrides: applied }, 'runtime config overrides applied');

    serve(ConfigView, () => h.configView(d));
    serve(ConfigUpdate, (input, ctx) => h.configUpdate(input, d, ctx));
    serve(ConfigReset, (input, ctx) => h.configReset(input, d, ctx));
    serve(ConfigHistory, (input) => h.configHistory(input, d));
    serve(ConfigStored, () => h.configStored(d));
    serve(PromptsList, () => h.promptsList(d));
    serve(MaskRulesList, () => h.maskList(d));
    serve(MaskRuleCreate, (input, ctx) => h.maskCreate(input, d, ctx));
    serve(MaskRuleUpdate, (input, ctx) => h.maskUpdate(input, d, ctx));
    serve(MaskRuleDelete, (input, ctx) => h.maskDelete(input, d, ctx));
    serve(LdapView, async () => h.ldapView(d));
    serve(LdapUpdate, (input, ctx) => h.ldapUpdate(input, d, ctx));
    serve(LdapTest, (input) => h.ldapTest(input, d));
    log.info({ store: store.kind }, 'settings ready');
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { name: Actor.Settings, stop: () => store.close() };
}
