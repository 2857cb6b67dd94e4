/**
 * The TypeBox schemas of protocol/schemas/*, by name, for the published contracts: a schema an
 * HTTP route or a bus subject uses whole becomes `#/components/schemas/<ExportName>`; any other
 * is written inline. TypeBox schemas are JSON Schema already: a copy through JSON drops what
 * only TypeBox reads (its symbols and refinements), nothing a client validates with.
 */
import type { TSchema } from 'typebox';
import * as analytics from '../../protocol/schemas/analytics.js';
import * as ask from '../../protocol/schemas/ask.js';
import * as catalog from '../../protocol/schemas/catalog.js';
import * as common from '../../protocol/schemas/common.js';
import * as events from '../../protocol/schemas/events.js';
import * as exports_ from '../../protocol/schemas/export.js';
import * as http from '../../protocol/schemas/http.js';
import * as identity from '../../protocol/schemas/identity.js';
import * as insights from '../../protocol/schemas/insights.js';
import * as llm from '../../protocol/schemas/llm.js';
import * as policy from '../../protocol/schemas/policy.js';
import * as profile from '../../protocol/schemas/profile.js';
import * as progress from '../../protocol/schemas/progress.js';
import * as schedules from '../../protocol/schemas/schedules.js';
import * as scope from '../../protocol/schemas/scope.js';
import * as semantic from '../../protocol/schemas/semantic.js';
import * as sql from '../../protocol/schemas/sql.js';
import * as sys from '../../protocol/schemas/sys.js';

/** in this order a name is given: the HTTP bodies first (their names are the ones routes read with) */
const MODULES: ReadonlyArray<Record<string, unknown>> = [
  http, common, ask, sql, catalog, events, exports_, identity, insights, llm, policy, profile, progress, schedules, scope, semantic, analytics, sys,
];

function isSchema(v: unknown): v is TSchema {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return typeof o.type === 'string' || Array.isArray(o.anyOf) || Array.isArray(o.oneOf) || Array.isArray(o.allOf) || 'const' in o || Array.isArray(o.enum);
}

/** A plain JSON copy of a schema (what a client sees). */
export function jsonSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/**
 * Names schemas as they are used, and keeps the components to publish: `ref(schema)` answers a
 * `$ref` to a named schema (its component written once), or the schema inline.
 */
export class SchemaNames {
  private static index: Map<object, string> | undefined;
  private readonly used = new Map<string, Record<string, unknown>>();

  constructor(private readonly base: string) {}

  private static names(): Map<object, string> {
    if (SchemaNames.index) return SchemaNames.index;
    const index = new Map<object, string>();
    const taken = new Set<string>();
    for (const mod of MODULES) {
      for (const name of Object.keys(mod).sort()) {
        const v = mod[name];
        if (!isSchema(v) || index.has(v) || taken.has(name)) continue;
        index.set(v, name);
        taken.add(name);
      }
    }
    return (SchemaNames.index = index);
  }

  /** `{$ref}` to the named component for a schema of protocol/schemas, else the schema inline. */
  ref(schema: TSchema, fallbackName?: string): Record<string, unknown> {
    const name = SchemaNames.names().get(schema) ?? fallbackName;
    if (!name) return jsonSchema(schema);
    if (!this.used.has(name)) this.used.set(name, jsonSchema(schema));
    return { $ref: `${this.base}${name}` };
  }

  /** Every component used so far, by name, sorted. */
  components(): Record<string, Record<string, unknown>> {
    return Object.fromEntries([...this.used.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
}
