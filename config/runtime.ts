/**
 * Runtime overrides of the loaded config (the admin panel's edits): validated against the
 * same schema as the file, put in force through config/current.ts (the one change path: a new
 * frozen snapshot every actor of the process reads at use time), and reset to the file's value.
 * Keys that only take effect at start-up, or that would let an admin session widen its own
 * power, are refused (START_ONLY, error FORBIDDEN with `details.start_only`).
 */
import { CortadoError } from '../protocol/errors.js';
import { configProblems } from './load.js';
import { replaceSetting, snapshotOf } from './current.js';
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
    // own names only: `query.constructor` is not a key (Object.prototype's names are not the schema's)
    for (const o of objects) next ??= (o.properties && Object.hasOwn(o.properties, part) ? o.properties[part] : undefined) ?? (o.patternProperties ? Object.values(o.patternProperties)[0] : undefined);
    node = next;
  }
  return node !== undefined;
}

/**
 * The keys a run-time override may not change, each with why: read once at start (a server,
 * a connection, a store, a bucket sized by it), or the keys to the kingdom (who is admin, where
 * secrets are kept). A prefix covers its whole section; `*` stands for one name (a provider).
 * Every other key of the schema takes effect at run time: the code reads it from the config in
 * force when it uses it (config/current.ts). test/config/overrides-walk.test.ts walks the schema
 * and holds every key to one of the two; docs/configuration.md "Run-time overrides" lists them.
 */
export const START_ONLY: ReadonlyArray<readonly [key: string, why: string]> = [
  ['app.name', 'written into the pages when they are loaded at start'],
  ['app.debug', 'the log level is set when the process starts'],
  ['app.log_level', 'the log level is set when the process starts'],
  ['app.host', 'the HTTP server listens at start'],
  ['app.port', 'the HTTP server listens at start'],
  ['app.http_server', 'the HTTP server is made at start'],
  ['app.max_body_kb', 'the HTTP server and the WebSocket endpoint are made with it at start'],
  ['app.trusted_proxies', 'the HTTP server is made with it at start'],
  ['app.headers_timeout_seconds', 'the HTTP server is made with it at start'],
  ['app.request_timeout_seconds', 'the HTTP server is made with it at start'],
  ['app.body_idle_timeout_seconds', 'the HTTP server is made with it at start'],
  ['app.keep_alive_timeout_seconds', 'the HTTP server is made with it at start'],
  ['bus', 'every process connects to NATS at start'],
  ['audit', 'the event stream and its consumers are set up at start'],
  ['metrics', 'the metrics registry and its listener are set up at start'],
  ['tracing', 'the trace exporter is set up at start'],
  ['database', 'the executor opens its pools and checks the role at start'],
  ['config_db', 'the storage and the encryption key are opened at start'],
  ['analytics.enabled', 'the analytics actor opens its store at start'],
  ['analytics.backend', 'the analytics actor opens its store at start'],
  ['analytics.storage', 'the analytics actor opens its store at start'],
  ['analytics.postgresql', 'the analytics actor opens its store at start'],
  ['analytics.access', 'the analytics routes are guarded with it at start'],
  ['admin.username', 'who is admin: only the config file says'],
  ['admin.password', 'who is admin: only the config file says'],
  ['admin.ldap_group_dn', 'who is admin: only the config file says'],
  ['plugins.auth.enabled', 'the identity actor checks the encryption key for it at start'],
  ['llm.provider', 'the LLM actor reports its provider from start'],
  ['llm.max_concurrency', 'each provider\'s call queue is sized when first used'],
  ['llm.max_queue', 'each provider\'s call queue is sized when first used'],
  ['llm.queue_timeout_ms', 'each provider\'s call queue is sized when first used'],
  ['llm.*.max_concurrency', 'each provider\'s call queue is sized when first used'],
  ['conversation', 'the conversation store is sized and its bucket\'s TTL set at start'],
  ['alarms.enabled', 'the alarms actor opens its store (and serves or refuses every request) at start'],
  ['alarms.storage_path', 'the alarms actor opens its store at start'],
  ['scheduler.enabled', 'the scheduler starts its leader (cron firing) at start'],
  ['scheduler.max_concurrent_jobs', 'the scheduler sizes its work queue\'s consumer at start'],
  ['scheduler.redelivery_seconds', 'the scheduler sets its work queue\'s consumer at start'],
];

function covers(pattern: string, key: string): boolean {
  const p = pattern.split('.');
  const k = key.split('.');
  return p.length <= k.length && p.every((s, i) => s === '*' || s === k[i]);
}

/** Why `key` is start-only, or undefined when it takes effect at run time. */
export function startOnlyReason(key: string): string | undefined {
  return START_ONLY.find(([pattern]) => covers(pattern, key))?.[1];
}

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.split('.').at(-1) ?? '');
}

export function overridable(key: string): boolean {
  return startOnlyReason(key) === undefined;
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
  const why = startOnlyReason(key);
  if (why !== undefined) throw new CortadoError('FORBIDDEN', `${key} is read at start-up only (${why}): change it in config/config.yaml and restart`, { key, start_only: true });
  const parts = key.split('.');
  if (!schemaHasKey(key)) throw new CortadoError('VALIDATION_FAILED', `${key}: there is no such key`);
  const copy = structuredClone(snapshotOf(config)) as unknown as Record<string, unknown>;
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

/**
 * Put `key = value` in force in this process (config/current.ts replaceSetting: a new frozen
 * snapshot); `undefined` resets the key to the file's value. Check it first (checkOverride).
 */
export function applyOverride(config: Config, key: string, value: unknown): void {
  replaceSetting(config, key, value);
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
