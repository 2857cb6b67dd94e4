/**
 * The config in force, and the one path by which it changes at run time.
 *
 * The loaded config is a deeply frozen snapshot: nothing may change it in place (an assignment
 * throws). What config/load.ts hands out is a read-only live view of a holder: every object of
 * the schema's shape (a section like `catalog`, `email.smtp`) is a frozen object of getters
 * reading the holder's current snapshot, so `config.catalog.cache_ttl_seconds` is the value in
 * force at the moment the code reads it, and a section held since start (`const smtp =
 * config.email.smtp`) still reads the current values. A value that is not an object of the
 * schema's shape (a number, a string, an array, a record such as `llm.pricing`) is the frozen
 * value of the snapshot it was read from: code that copies one at start keeps the start value,
 * which is why config/runtime.ts lists such keys as start-only.
 *
 * `replaceSetting` is the only change: it builds the next snapshot (a copy along the key's path,
 * frozen) and swaps it in. Its callers are config/runtime.ts `applyOverride` — used by the
 * settings actor when an admin changes a key, and by cli/config-sync.ts in every process on
 * the config-changed event (ConfigChangedEvt) and at start (the stored overrides) — and test set-ups.
 */
import type { TSchema } from 'typebox';
import { CortadoError } from '../protocol/errors.js';
import { ConfigSchema, type Config } from './schema.js';

type Node = TSchema & { type?: string; properties?: Record<string, Node>; required?: string[] };

interface Holder {
  current: Config;
  readonly baseline: Config;
}

const HOLDERS = new WeakMap<object, Holder>();

/** Freeze `value` and everything inside it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A schema object with fixed properties that is always present (a section): read through getters. */
function isSection(node: Node | undefined, required: boolean): node is Node & { properties: Record<string, Node> } {
  return node !== undefined && required && node.type === 'object' && node.properties !== undefined && Object.keys(node.properties).length > 0;
}

function at(snapshot: unknown, path: readonly string[]): Record<string, unknown> | undefined {
  let cur = snapshot;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[p];
  }
  return cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>) : undefined;
}

function viewOf(holder: Holder, schema: Node & { properties: Record<string, Node> }, path: readonly string[]): object {
  const view: Record<string, unknown> = {};
  for (const [k, child] of Object.entries(schema.properties)) {
    const required = schema.required?.includes(k) === true || (child as { default?: unknown }).default !== undefined;
    if (isSection(child, required)) {
      const sub = viewOf(holder, child, [...path, k]);
      Object.defineProperty(view, k, { get: () => sub, enumerable: true });
    } else {
      Object.defineProperty(view, k, { get: () => at(holder.current, path)?.[k], enumerable: true });
    }
  }
  return Object.freeze(view);
}

/**
 * The live read-only view of a freshly loaded config (config/load.ts): `snapshot` is frozen here
 * and is also the file's own values (what a reset goes back to).
 */
export function liveConfig(snapshot: Config): Config {
  const holder: Holder = { current: deepFreeze(snapshot), baseline: snapshot };
  const view = viewOf(holder, ConfigSchema as unknown as Node & { properties: Record<string, Node> }, []) as Config;
  HOLDERS.set(view, holder);
  return view;
}

function holderOf(config: Config): Holder {
  const holder = HOLDERS.get(config);
  if (!holder) throw new CortadoError('INTERNAL', 'not a loaded config (config/load.ts): it has no run-time change path');
  return holder;
}

/** The frozen snapshot in force now (a plain object: for copying, comparing, serialising). */
export function snapshotOf(config: Config): Config {
  return HOLDERS.get(config)?.current ?? config;
}

/** The file's own values (frozen), before any run-time change. */
export function baselineOf(config: Config): Config | undefined {
  return HOLDERS.get(config)?.baseline;
}

/**
 * THE run-time change: the config in force becomes a copy of it with `key` (dotted) set to
 * `value` (frozen), or with the file's value when `value` is undefined. Unchecked: the settings
 * actor checks a change first (config/runtime.ts checkOverride).
 */
export function replaceSetting(config: Config, key: string, value: unknown): void {
  const holder = holderOf(config);
  const parts = key.split('.');
  const next = value === undefined ? at({ v: holder.baseline }, ['v', ...parts.slice(0, -1)])?.[parts.at(-1)!] : structuredClone(value);
  holder.current = deepFreeze(withPath(holder.current as unknown as Record<string, unknown>, parts, next, key)) as unknown as Config;
}

function withPath(obj: Record<string, unknown>, parts: readonly string[], value: unknown, key: string): Record<string, unknown> {
  const [head, ...rest] = parts;
  if (head === undefined) return obj;
  if (rest.length === 0) {
    const out = { ...obj };
    if (value === undefined) delete out[head];
    else out[head] = value;
    return out;
  }
  const child = obj[head];
  if (child === null || typeof child !== 'object' || Array.isArray(child)) throw new CortadoError('VALIDATION_FAILED', `${key}: there is no such key`);
  return { ...obj, [head]: withPath(child as Record<string, unknown>, rest, value, key) };
}
