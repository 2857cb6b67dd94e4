/**
 * Every key of the config schema, walked: a run-time override is either refused as start-only
 * (FORBIDDEN with details.start_only, config/runtime.ts START_ONLY), or accepted and then read by
 * the running code — through the live view every actor holds (config/current.ts), including a
 * section held since before the change — and reset to the file's value after. No key may be
 * accepted and leave the config in force unchanged. The loaded config is frozen: an assignment
 * anywhere in it throws.
 */
import t from 'tap';
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { baselineOf, snapshotOf } from '../../config/current.js';
import { applyOverride, checkOverride, configValue, START_ONLY, startOnlyReason } from '../../config/runtime.js';
import { ConfigSchema, type Config } from '../../config/schema.js';
import { CortadoError } from '../../protocol/errors.js';
import { testConfig } from '../helpers/config.js';

type Node = TSchema & {
  type?: string;
  enum?: unknown[];
  properties?: Record<string, Node>;
  patternProperties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  anyOf?: Node[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
};

/** Every key an override can name: the leaves, and records/arrays/unions as one value each. */
function leaves(node: Node, at: string): Array<{ key: string; node: Node }> {
  if (node.type === 'object' && node.properties && Object.keys(node.properties).length > 0) {
    return Object.entries(node.properties).flatMap(([k, child]) => leaves(child, at ? `${at}.${k}` : k));
  }
  return [{ key: at, node }];
}

const STRINGS = ['changed-by-test', 'Europe/Berlin', 'https://changed.example.org', 'ops@example.org', 'claude-changed', 'x'];

/** Values of the key's type, different from `now`, most likely valid first. */
function candidates(node: Node, now: unknown): unknown[] {
  if (node.enum) return node.enum.filter((v) => v !== now);
  if (node.anyOf) return node.anyOf.flatMap((n) => candidates(n, now));
  switch (node.type) {
    case 'boolean':
      return [!now];
    case 'integer':
    case 'number': {
      const n = typeof now === 'number' ? now : (node.default as number | undefined) ?? 1;
      return [n + 1, n - 1, node.minimum, node.maximum, 1, 2, 0].filter((v) => typeof v === 'number' && v !== now);
    }
    case 'string':
      return STRINGS.filter((s) => s !== now);
    case 'array': {
      const item = node.items ? candidates(node.items, undefined) : [];
      const list: unknown[] = Array.isArray(now) && now.length ? [[], now.slice(0, 1)] : [];
      for (const v of item.slice(0, 4)) list.push([v]);
      if (node.items?.type === 'object') list.push([Value.Create(node.items)]);
      return list;
    }
    case 'object': {
      const value = node.patternProperties ? Object.values(node.patternProperties)[0] : undefined;
      if (value) return [{ changed: value.type === 'object' ? Value.Create(value) : candidates(value, undefined)[0] }, {}];
      return [Value.Create(node)];
    }
    default:
      return STRINGS;
  }
}

function read(config: Config, key: string): unknown {
  let cur: unknown = config;
  for (const p of key.split('.')) cur = (cur as Record<string, unknown> | undefined)?.[p];
  return cur;
}

const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

t.test('the loaded config is frozen all the way down, and the view has no setter', async (t) => {
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1' });
  t.throws(() => { (config as { query: { max_limit: number } }).query.max_limit = 1; }, TypeError, 'a leaf');
  t.throws(() => { (config as unknown as Record<string, unknown>).query = {}; }, TypeError, 'a section');
  t.throws(() => { (config.export.formats as string[]).push('csv'); }, TypeError, 'an array');
  t.throws(() => { (snapshotOf(config) as { query: { max_limit: number } }).query.max_limit = 1; }, TypeError, 'the snapshot');
  t.ok(Object.isFrozen(baselineOf(config)), 'the file\'s values');
  t.equal(config.query.max_limit, snapshotOf(config).query.max_limit);
});

t.test('every key of the schema: refused as start-only, or in force after the override', async (t) => {
  // what other keys need to be on for some to be switched on at all (cross-checks, config/load.ts)
  const config = testConfig({
    natsUrl: 'nats://127.0.0.1:1',
    extra: { ldap: { enabled: true, server: 'ldap://127.0.0.1:1' }, plugins: { auth: { enabled: true } }, email: { smtp: { use_tls: false } } },
  });
  const keys = leaves(ConfigSchema as unknown as Node, '');
  t.ok(keys.length > 150, `the walk covers the schema (${keys.length} keys)`);
  const unproven: string[] = [];
  let live = 0;
  let startOnly = 0;
  for (const { key, node } of keys) {
    const section = key.split('.').slice(0, -1).reduce<unknown>((o, p) => (o as Record<string, unknown>)[p], config);
    const before = structuredClone(configValue(config, key));
    const why = startOnlyReason(key);
    const tries = candidates(node, before).filter((v) => !sameValue(v, before));
    if (why !== undefined) {
      startOnly++;
      const value = tries[0] ?? 'x';
      const err = (() => { try { checkOverride(config, key, value); return undefined; } catch (e) { return e; } })();
      t.ok(err instanceof CortadoError && err.code === 'FORBIDDEN' && err.details?.start_only === true && err.message.includes('start-up only'), `${key}: refused as start-only (${why})`);
      continue;
    }
    if (node.enum?.length === 1) {
      t.pass(`${key}: has one possible value (${JSON.stringify(node.enum[0])}): nothing to override`);
      continue;
    }
    let applied: unknown;
    for (const value of tries) {
      try {
        checkOverride(config, key, value);
      } catch (err) {
        if ((err as CortadoError).code === 'FORBIDDEN') t.fail(`${key}: refused, but not listed as start-only`);
        continue;
      }
      applied = value;
      break;
    }
    if (applied === undefined) {
      unproven.push(key);
      continue;
    }
    live++;
    applyOverride(config, key, applied);
    const ok = sameValue(read(config, key), applied) && sameValue((section as Record<string, unknown>)[key.split('.').at(-1)!], applied);
    if (!ok) t.fail(`${key}: accepted, but the config in force still reads ${JSON.stringify(read(config, key))}`);
    applyOverride(config, key, undefined);
    if (!sameValue(read(config, key), before)) t.fail(`${key}: not back to the file's value after a reset`);
  }
  for (const key of ['query.constructor', 'query.toString', 'constructor', '__proto__', 'query.__proto__', 'query.max_limit.x']) {
    t.throws(() => checkOverride(config, key, 1), { code: 'VALIDATION_FAILED' }, `${key} is not a key of the schema`);
  }
  t.same(unproven, [], 'every key that takes effect at run time was shown to (a valid new value was found)');
  t.ok(live > 100 && startOnly > 20, `${live} keys take effect at run time, ${startOnly} are start-only`);
  // every entry of the start-only list names keys of the schema
  for (const [pattern] of START_ONLY) {
    const re = new RegExp(`^${pattern.split('.').map((s) => (s === '*' ? '[^.]+' : s)).join('\\.')}(\\.|$)`);
    t.ok(keys.some(({ key }) => re.test(key)), `${pattern} names keys of the schema`);
  }
});
