/**
 * Declared fields only: what a body holds beyond the fields its schema names never reaches a
 * route (mass assignment). A route spreads its body into a bus request (`{...body, by: user}`)
 * and that request's own fields — a session's secret, an owner, an id from the path — must not
 * be settable by whoever wrote the body.
 *
 * Two policies (`readJson`'s `fields` option, edge/http/reply.ts):
 * - `refuse` (every route by default): an undeclared field is 400 VALIDATION_FAILED naming it;
 * - `strip`: it is dropped before the route sees the body. Only for the SQLatte-compatible
 *   routes, whose widgets send more than Cortado reads (`bypass_intent`, `http_scheme`, …), and
 *   for the writes that take a record as GET gave it (alarms, schedules, the semantic layer:
 *   its id and times come back with it).
 *
 * What counts as declared is read from the JSON Schema the route validates with: an object's
 * `properties` (and `additionalProperties` / `patternProperties` when they are schemas or
 * `true`), every item of an array, every member of an `allOf`, and of an `anyOf` the member
 * that holds the value with the fewest undeclared fields. A field is judged by where it is,
 * at any depth (`/tiles/0/sql`).
 */
import { Check } from 'typebox/value';
import type { TSchema } from 'typebox';

export const FieldPolicy = { Refuse: 'refuse', Strip: 'strip' } as const;
export type FieldPolicy = (typeof FieldPolicy)[keyof typeof FieldPolicy];

/** One field a schema does not declare: where it is, and the object that holds it. */
interface Stray {
  path: string;
  holder: Record<string, unknown>;
  key: string;
}

type Schema = Record<string, unknown>;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isSchema(v: unknown): v is Schema {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A JSON pointer segment (RFC 6901). */
function segment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function strays(schema: Schema, value: unknown, path: string, out: Stray[]): void {
  if (Array.isArray(schema.allOf)) {
    // a key any member declares is declared: judge the object once against the union of their properties
    const members = schema.allOf.filter(isSchema);
    const merged: Schema = { type: 'object', properties: {}, patternProperties: {} };
    let open = false;
    for (const m of members) {
      if (isSchema(m.properties)) Object.assign(merged.properties as Schema, m.properties);
      if (isSchema(m.patternProperties)) Object.assign(merged.patternProperties as Schema, m.patternProperties);
      if (m.additionalProperties === true || isSchema(m.additionalProperties) || (m.type !== 'object' && !m.properties)) open = true;
    }
    if (open) merged.additionalProperties = true;
    strays(merged, value, path, out);
    return;
  }
  if (Array.isArray(schema.anyOf)) {
    let best: Stray[] | undefined;
    for (const member of schema.anyOf) {
      if (!isSchema(member) || !Check(member as TSchema, value)) continue;
      const found: Stray[] = [];
      strays(member, value, path, found);
      if (!best || found.length < best.length) best = found;
      if (best.length === 0) break;
    }
    if (best) out.push(...best);
    return;
  }
  if (Array.isArray(value)) {
    const items = schema.items;
    const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(items) ? items : undefined;
    value.forEach((item, i) => {
      const s = prefix ? prefix[i] : items;
      if (isSchema(s)) strays(s, item, `${path}/${i}`, out);
    });
    return;
  }
  if (!isPlainObject(value) || schema.type !== 'object') return;
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const patterns = isSchema(schema.patternProperties) ? Object.entries(schema.patternProperties) : [];
  const additional = schema.additionalProperties;
  for (const key of Object.keys(value)) {
    const at = `${path}/${segment(key)}`;
    const declared = Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (isSchema(declared)) {
      strays(declared, value[key], at, out);
      continue;
    }
    const pattern = patterns.find(([p]) => new RegExp(p, 'u').test(key))?.[1];
    if (isSchema(pattern)) {
      strays(pattern, value[key], at, out);
      continue;
    }
    if (isSchema(additional)) {
      strays(additional, value[key], at, out);
      continue;
    }
    if (additional === true) continue;
    out.push({ path: at, holder: value, key });
  }
}

/** The JSON pointers of the fields `value` holds that `schema` does not declare, in document order. */
export function undeclaredFields(schema: TSchema, value: unknown): string[] {
  const out: Stray[] = [];
  strays(schema as unknown as Schema, value, '', out);
  return out.map((s) => s.path);
}

/** `value` without the fields `schema` does not declare (changed in place); their pointers. */
export function stripUndeclared(schema: TSchema, value: unknown): string[] {
  const out: Stray[] = [];
  strays(schema as unknown as Schema, value, '', out);
  for (const s of out) delete s.holder[s.key];
  return out.map((s) => s.path);
}
