/**
 * Runtime config changes reach every process: a `config.changed` event is put in force in this
 * process (config/runtime.ts applyOverride → config/current.ts replaceSetting, the one change
 * path: every actor here reads the config in force when it uses a setting), and a process that
 * starts after changes were made asks the settings actor for the stored overrides once.
 */
import type { Bus } from '../runtime/bus.js';
import type { Logger } from '../runtime/log.js';
import { ConfigChangedEvt, ConfigStored } from '../protocol/subjects.js';
import { applyOverride, checkOverride, supersededHere } from '../config/runtime.js';
import type { Config } from '../config/schema.js';
import { createSecretBox } from '../actors/lib/crypto/secrets.js';

export function startConfigSync(bus: Bus, config: Config, log: Logger): () => void {
  const box = createSecretBox(config);
  const apply = (key: string, stored: unknown, reset: boolean): void => {
    const value = reset ? undefined : box.openForKey(key, stored);
    if (!reset) checkOverride(config, key, value);
    applyOverride(config, key, value);
  };
  return bus.on(ConfigChangedEvt, (e) => {
    // this process's settings actor applied it already, and a newer change of the key since
    if (supersededHere(config, e.key, e.id)) return;
    try {
      apply(e.key, e.value, e.reset);
      log.info({ key: e.key, by: e.user, reset: e.reset }, 'config changed at run time');
    } catch (err) {
      log.warn({ key: e.key, err: (err as Error).message }, 'cannot apply a config change');
    }
  });
}

/** The overrides already stored, for a process without a settings actor of its own. */
export async function loadStoredOverrides(bus: Bus, config: Config, log: Logger): Promise<void> {
  const box = createSecretBox(config);
  try {
    const { overrides } = await bus.request(ConfigStored, {}, { requestId: 'startup' }, { timeoutMs: 3_000 });
    for (const o of overrides) {
      try {
        const value = box.openForKey(o.key, o.value);
        checkOverride(config, o.key, value);
        applyOverride(config, o.key, value);
      } catch (err) {
        log.warn({ key: o.key, err: (err as Error).message }, 'a stored config override does not apply here');
      }
    }
    if (overrides.length) log.info({ overrides: overrides.length }, 'runtime config overrides applied');
  } catch (err) {
    log.debug({ err: (err as Error).message }, 'no stored config overrides (no settings actor answered)');
  }
}
