/**
 * Runtime overrides of the loaded config (the admin panel's edits): validated against the
 * same schema as the file, applied in place to the config object every actor of the process
 * holds, and reset to the file's value. Keys that only take effect at start-up, or that would
 * let an admin session widen its own power, are refused.
 */
import { CortadoError } from '../protocol/errors.js';
import { baselineOf, configProblems } from './load.js';
import type { TSchema } from 'typebox';
import { ConfigSchema, SECRET_KEYS, type Config } from './schema.js';

type SchemaNode = TSchema & { properties?: Record<string, SchemaNode>; patternProperties?: Record<string, SchemaNode>; anyOf?: SchemaNode[] };

/** Whether the config schema has this dotted key (records accept any name at their level). */
export function schemaHasKey(key: string): boolean {
  let node: SchemaNode | undefined = ConfigSchema as SchemaNode;
  for (const part of key.split('.')) {
    if (!node) return false;
    const objects: SchemaNode[] = node.anyOf ? node.anyOf.filter((n) => n.properties || n.patternProperties) : [node];
    let next: SchemaNode | undefined;
    for (const o of objects) next ??= o.properties?.[part] ?? (o.patternProperties ? Object.values(o.patternProperties)[0] : undefined);
    node = next;
  }
  return node !== undefined;
}

/** Sections and keys an override may not touch: read at start, or the keys to the kingdom. */
const FIXED: readonly string[] = [
  'app.host', 'app.port', 'app.http_server', 'app.max_body_kb', 'app.trusted_proxies',
  'app.headers_timeout_seconds', 'app.request_timeout_seconds', 'app.body_idle_timeout_seconds', 'app.keep_alive_timeout_seconds',
  'bus', 'audit', 'database', 'config_db', 'analytics.enabled', 'analytics.backend', 'analytics.storage', 'analytics.postgresql', 'analytics.access', 'admin.username', 'admin.password', 'admin.ldap_group_dn', 'plugins.auth.enabled',
  'llm.provider',
  // the alarms actor opens its store (and serves or refuses every request) once, at start
  'alarms.enabled', 'alarms.storage_path',
  // the scheduler starts its leader (cron firing) and sizes its work queue's consumer at start
  'scheduler.enabled', 'scheduler.max_concurrent_jobs',
];

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.split('.').at(-1) ?? '');
}

export function overridable(key: string): boolean {
  return !FIXED.some((f) => key === f || key.startsWith(`${f}.`));
}

function getPath(obj: unknown, parts: readonly string[]): unknown {
  let cur = obj;
  for (const p of parts) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, p)) return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, parts: readonly string[], value: unknown): void {
  let cur: Record<string, unknown> = obj;
  for (const p of parts.slice(0, -1)) {
    const next = cur[p];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) throw new CortadoError('VALIDATION_FAILED', `${parts.join('.')}: there is no such key`);
    cur = next as Record<string, unknown>;
  }
  cur[parts.at(-1)!] = value;
}

/** The value of a key in force. */
export function configValue(config: Config, key: string): unknown {
  return getPath(config, key.split('.'));
}

/**
 * Check that `key = value` makes a valid config (and is allowed at run time), without
 * changing anything. Throws VALIDATION_FAILED naming the key, or FORBIDDEN.
 */
export function checkOverride(config: Config, key: string, value: unknown): void {
  if (!overridable(key)) throw new CortadoError('FORBIDDEN', `${key} is read at start-up only: change it in config/config.yaml and restart`);
  const parts = key.split('.');
  if (!schemaHasKey(key)) throw new CortadoError('VALIDATION_FAILED', `${key}: there is no such key`);
  const copy = structuredClone(config) as unknown as Record<string, unknown>;
  setPath(copy, parts, value);
  const problems = configProblems(copy);
  if (problems.length) throw new CortadoError('VALIDATION_FAILED', problems.join('; '), { problems });
}

/**
 * Changes the settings actor applied in this process before announcing them (evt.config.changed),
 * by key, oldest first. The process's own announcements come back later (events are read every
 * 100 ms): applying one that a newer change of the same key has overtaken here would undo the
 * newer one until its own announcement arrived (seen: `set x false`, `reset x`, then the late
 * "false" switched x off again for a moment).
 */
const announced = new WeakMap<Config, Map<string, string[]>>();

/** The settings actor applied a change of `key` here and announces it as event `id`. */
export function noteLocalChange(config: Config, key: string, id: string): void {
  let byKey = announced.get(config);
  if (!byKey) announced.set(config, (byKey = new Map()));
  const ids = byKey.get(key) ?? [];
  ids.push(id);
  byKey.set(key, ids.length > 100 ? ids.slice(-100) : ids);
}

/**
 * Whether announced change `id` of `key` was applied here already and a newer local change of
 * the key followed it: then it must not be applied again. The newest local one is applied again
 * (the same value; with settings in several processes it puts the key back at its place in the
 * stream's order); changes from other processes are always applied.
 */
export function supersededHere(config: Config, key: string, id: string): boolean {
  const byKey = announced.get(config);
  const ids = byKey?.get(key);
  const at = ids ? ids.indexOf(id) : -1;
  if (!ids || at < 0) return false;
  const newest = at === ids.length - 1;
  ids.splice(0, at + 1);
  if (ids.length === 0) byKey!.delete(key);
  return !newest;
}

/** Apply `key = value` in place; `undefined` resets the key to the file's value. */
export function applyOverride(config: Config, key: string, value: unknown): void {
  const parts = key.split('.');
  const next = value === undefined ? structuredClone(getPath(baselineOf(config), parts)) : value;
  setPath(config as unknown as Record<string, unknown>, parts, next);
}

/** A deep copy with every secret replaced by "********" (empty secrets stay empty). */
export function maskSecrets<T>(value: T): T {
  const walk = (v: unknown, key: string): unknown => {
    if (SECRET_KEYS.has(key) && v !== undefined && v !== null) return v === '' ? '' : '********';
    if (Array.isArray(v)) return v.map((x) => walk(x, ''));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  return walk(value, '') as T;
}
