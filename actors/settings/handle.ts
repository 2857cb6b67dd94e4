/**
 * The settings actor's logic: runtime config overrides (prompts and LDAP settings are config
 * keys too), the prompts view, mask rules, the LDAP connection test. Plain functions over
 * (input, deps, ctx).
 *
 * A change is checked against the config schema, its secrets sealed, stored with who and when
 * (the override history), applied to this process's config, and announced (`config.changed`)
 * so every other process applies it too.
 */
import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { Bus } from '../../runtime/bus.js';
import type { Ctx } from '../../protocol/headers.js';
import { CortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type * as I from '../../protocol/schemas/identity.js';
import { ConfigChangedEvt, MaskChangedEvt } from '../../protocol/subjects.js';
import { baselineOf } from '../../config/current.js';
import { DEFAULT_PROMPTS, PROMPT_KEYS } from '../../config/prompts.js';
import { applyOverride, checkOverride, configValue, isSecretKey, maskSecrets, noteLocalChange } from '../../config/runtime.js';
import type { Config } from '../../config/schema.js';
import type { MaskRule, Storage } from '../../store/index.js';
import { testLdapConnection, type LdapConnectionTest, type LdapSettings } from '../lib/ldap/client.js';
import { sealForRequest, type SecretBox } from '../lib/crypto/secrets.js';

export interface SettingsDeps {
  bus: Pick<Bus, 'publish'>;
  config: Config;
  log: Logger;
  store: Pick<Storage, 'kind' | 'overrides' | 'prompts' | 'ldap' | 'maskRules'>;
  box: SecretBox;
  now?: () => number;
}

const MASKED = '********';

function event(ctx: Ctx, deps: SettingsDeps): { id: string; ts: string; request_id: string; user?: string } {
  return { id: randomUUID(), ts: new Date(deps.now?.() ?? Date.now()).toISOString(), request_id: ctx.requestId, ...(ctx.user ? { user: ctx.user } : {}) };
}

// ---- config overrides ----------------------------------------------------------------------

export async function configView(deps: SettingsDeps): Promise<I.ConfigViewReply> {
  const overrides = await deps.store.overrides.list();
  return {
    config: maskSecrets(deps.config) as unknown as Record<string, unknown>,
    overrides: overrides.map((o) => ({ key: o.key, value: isSecretKey(o.key) ? MASKED : o.value, updated_by: o.updated_by, updated_at: o.updated_at })),
    persistent: deps.store.kind === 'postgresql',
  };
}

/**
 * One checked, sealed, stored, applied and announced change of `key`. `write` stores the sealed
 * value in the repository the key belongs to and says what it replaced.
 */
async function change(
  key: string, value: unknown, by: string, deps: SettingsDeps, ctx: Ctx,
  write: (stored: unknown) => Promise<{ previous?: unknown }>,
): Promise<{ key: string; value: unknown; previous?: unknown }> {
  checkOverride(deps.config, key, value);
  const secret = isSecretKey(key);
  const stored = sealForRequest(() => deps.box.sealForKey(key, value));
  const { previous } = await write(stored);
  const announce = { ...event(ctx, deps), user: by, key, value: stored, reset: false };
  noteLocalChange(deps.config, key, announce.id);
  applyOverride(deps.config, key, value);
  deps.bus.publish(ConfigChangedEvt, announce, ctx);
  deps.log.info({ key, by }, 'config changed');
  const shown = (v: unknown) => (secret ? MASKED : v);
  return { key, value: shown(value), ...(previous !== undefined ? { previous: shown(previous) } : {}) };
}

export async function configUpdate(input: I.ConfigUpdateRequest, deps: SettingsDeps, ctx: Ctx): Promise<{ key: string; value: unknown; previous?: unknown }> {
  return change(input.key, input.value, input.by, deps, ctx, (stored) => deps.store.overrides.set(input.key, stored, input.by));
}

export async function configReset(input: { key: string; by: string }, deps: SettingsDeps, ctx: Ctx): Promise<{ key: string; value: unknown }> {
  checkOverride(deps.config, input.key, configValue(baselineOf(deps.config) ?? deps.config, input.key));
  const removed = await deps.store.overrides.delete(input.key, input.by);
  if (!removed) throw new CortadoError('NOT_FOUND', `${input.key} has no runtime override`);
  const announce = { ...event(ctx, deps), user: input.by, key: input.key, reset: true };
  noteLocalChange(deps.config, input.key, announce.id);
  applyOverride(deps.config, input.key, undefined);
  deps.bus.publish(ConfigChangedEvt, announce, ctx);
  // a key with no value of its own once reset (a prompt: its shipped text is no config value)
  // answers null: a reply without `value` broke its contract, so Reset of a prompt was a 500
  const value = configValue(deps.config, input.key) ?? null;
  return { key: input.key, value: isSecretKey(input.key) ? MASKED : value };
}

export async function configHistory(input: { key?: string; limit?: number; offset?: number }, deps: SettingsDeps): Promise<Static<typeof I.ConfigHistoryReply>> {
  const changes = await deps.store.overrides.history(input);
  const mask = (key: string, v: unknown) => (v === undefined ? undefined : isSecretKey(key) ? MASKED : v);
  return {
    changes: changes.map((c) => ({
      id: c.id, key: c.key, changed_by: c.changed_by, changed_at: c.changed_at,
      ...(c.old_value !== undefined ? { old_value: mask(c.key, c.old_value) } : {}),
      ...(c.new_value !== undefined ? { new_value: mask(c.key, c.new_value) } : {}),
    })),
  };
}

/** The overrides as stored (secrets sealed), for a process that starts after changes were made. */
export async function configStored(deps: SettingsDeps): Promise<{ overrides: Array<{ key: string; value: unknown }> }> {
  return { overrides: (await deps.store.overrides.list()).map((o) => ({ key: o.key, value: o.value })) };
}

/** Overrides from the store applied to this process's config at start (sealed secrets opened). */
export async function applyStoredOverrides(deps: SettingsDeps): Promise<number> {
  let n = 0;
  for (const o of await deps.store.overrides.list()) {
    try {
      const value = deps.box.openForKey(o.key, o.value);
      checkOverride(deps.config, o.key, value);
      applyOverride(deps.config, o.key, value);
      n++;
    } catch (err) {
      deps.log.warn({ key: o.key, err: (err as Error).message }, 'a stored config override no longer applies: skipped');
    }
  }
  return n;
}

// ---- prompts -------------------------------------------------------------------------------

export async function promptsList(deps: SettingsDeps): Promise<{ prompts: Array<{ key: string; text: string; source: 'override' | 'file' | 'default' }> }> {
  const overridden = new Set((await deps.store.prompts.list()).map((p) => p.name));
  const file = baselineOf(deps.config)?.prompts as Record<string, string | undefined> | undefined;
  const current = deps.config.prompts as Record<string, string | undefined>;
  return {
    prompts: PROMPT_KEYS.map((key) => {
      const source = overridden.has(key) ? 'override' : file?.[key]?.trim() ? 'file' : 'default';
      const text = current[key]?.trim() ? current[key]! : DEFAULT_PROMPTS[key];
      return { key, text, source };
    }),
  };
}

// ---- mask rules ----------------------------------------------------------------------------

function checkPattern(p: string | undefined): void {
  if (p !== undefined && !/^[A-Za-z0-9_*?.$-]+$/.test(p)) {
    throw new CortadoError('VALIDATION_FAILED', 'field_pattern: letters, digits, _, -, $, . and the wildcards * and ? only');
  }
}

export async function maskList(deps: SettingsDeps): Promise<{ rules: MaskRule[] }> {
  return { rules: await deps.store.maskRules.list() };
}

export async function maskCreate(input: I.MaskRuleCreateInput, deps: SettingsDeps, ctx: Ctx): Promise<MaskRule> {
  checkPattern(input.field_pattern);
  const r = await deps.store.maskRules.create(input);
  maskChanged('create', r.id, deps, ctx);
  return r;
}

export async function maskUpdate(input: I.MaskRuleUpdateInput, deps: SettingsDeps, ctx: Ctx): Promise<MaskRule> {
  const { id, ...patch } = input;
  checkPattern(patch.field_pattern);
  const r = await deps.store.maskRules.update(id, patch);
  if (!r) throw new CortadoError('NOT_FOUND', 'there is no such mask rule');
  maskChanged('update', id, deps, ctx);
  return r;
}

export async function maskDelete(input: { id: string }, deps: SettingsDeps, ctx: Ctx): Promise<{ ok: boolean }> {
  if (!(await deps.store.maskRules.delete(input.id))) throw new CortadoError('NOT_FOUND', 'there is no such mask rule');
  maskChanged('delete', input.id, deps, ctx);
  return { ok: true };
}

/**
 * After a stored change: announced, so every process that keeps the rules (masking, alerts)
 * drops them at once instead of serving the old ones until its TTL passes.
 */
function maskChanged(action: I.MaskChanged['action'], ruleId: string, deps: SettingsDeps, ctx: Ctx): void {
  deps.bus.publish(MaskChangedEvt, { ...event(ctx, deps), action, rule_id: ruleId }, ctx);
}

// ---- LDAP settings -------------------------------------------------------------------------

export function ldapView(deps: SettingsDeps): { settings: Record<string, unknown> } {
  return { settings: maskSecrets(deps.config.ldap) as unknown as Record<string, unknown> };
}

export async function ldapUpdate(input: { settings: Record<string, unknown>; by: string }, deps: SettingsDeps, ctx: Ctx): Promise<{ settings: Record<string, unknown> }> {
  const keys = Object.keys(input.settings);
  const known = Object.keys(deps.config.ldap);
  const unknown = keys.filter((k) => !known.includes(k));
  if (unknown.length) throw new CortadoError('VALIDATION_FAILED', `unknown LDAP settings: ${unknown.join(', ')}`);
  // the masked placeholder sent back unchanged means "keep the stored secret"
  const changes = keys.filter((k) => !(isSecretKey(k) && input.settings[k] === MASKED));
  // all checked before any is stored: a bad value changes nothing
  for (const k of changes) checkOverride(deps.config, `ldap.${k}`, input.settings[k]);
  for (const k of changes) {
    await change(`ldap.${k}`, input.settings[k], input.by, deps, ctx, (stored) => deps.store.ldap.set(k, stored, input.by));
  }
  return ldapView(deps);
}

export async function ldapTest(input: { settings?: Record<string, unknown> }, deps: SettingsDeps): Promise<LdapConnectionTest> {
  const merged = { ...deps.config.ldap } as Record<string, unknown>;
  for (const [k, v] of Object.entries(input.settings ?? {})) {
    if (!(k in merged)) throw new CortadoError('VALIDATION_FAILED', `unknown LDAP setting: ${k}`);
    if (isSecretKey(k) && v === MASKED) continue;
    // the same rules as a saved setting: a server that is no string is a 400, not a crash in the client
    checkOverride(deps.config, `ldap.${k}`, v);
    merged[k] = v;
  }
  return testLdapConnection(merged as unknown as LdapSettings);
}
