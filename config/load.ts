/**
 * Reads config/config.yaml once: `${VAR}` / `${VAR:default}` interpolation in every string,
 * defaults, type conversion (env values are strings), validation with messages that name
 * the key path, warnings for unknown keys and for settings that do not do what they seem to
 * (advice). Values are never printed (they may be secrets). The config it returns is frozen: a
 * read-only live view of the snapshot in force (config/current.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Value from 'typebox/value';
import { Compile } from 'typebox/compile';
import type { TSchema } from 'typebox';
import YAML from 'yaml';
import { CortadoError } from '../protocol/errors.js';
import { ConfigSchema, type Config } from './schema.js';
import { liveConfig } from './current.js';
import { opsConfigProblems } from './ops-checks.js';
import { missingCredentials, resolveRoute } from './model-routing.js';

/** Keys that only catalog.linking: model reads (warned about when set under lexical). */
const LINKING_KEYS = ['catalog.linking_max_candidates', 'catalog.linking_max_chars', 'catalog.linking_timeout_ms', 'model_routing.table_selection'] as const;

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_CONFIG_PATH = path.join(ROOT, 'config', 'config.yaml');

const check = Compile(ConfigSchema);

export interface LoadedConfig {
  config: Config;
  file: string;
  warnings: string[];
}

/** The file to read: --config FILE, then CORTADO_CONFIG, then config/config.yaml. */
export function resolveConfigPath(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): string {
  const i = argv.indexOf('--config');
  const fromArg = i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith('--config='))?.slice('--config='.length);
  const chosen = fromArg || env.CORTADO_CONFIG || DEFAULT_CONFIG_PATH;
  return path.resolve(chosen);
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalid(file, [`cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return parseConfig(text, file, env);
}

export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let raw: unknown;
  try {
    raw = YAML.parse(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    const e = err as { message?: string; linePos?: Array<{ line: number; col: number }> };
    const where = e.linePos?.[0] ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
    throw invalid(file, [`not valid YAML${where}: ${String(e.message ?? '').split('\n')[0]}`]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw invalid(file, ['the file must be a YAML mapping with at least the sections llm and database']);
  }
  const problems: string[] = [];
  const interpolated = interpolate(raw, '', env, problems);
  const warnings = unknownKeys(ConfigSchema, interpolated, '');
  if (problems.length) throw invalid(file, problems);
  // what the file itself says, before the defaults fill it in (in place)
  const jobTimeoutSet = hasKey(interpolated, ['scheduler', 'job_timeout_seconds']);
  const linkingSet = LINKING_KEYS.filter((k) => hasKey(interpolated, k.split('.')));

  let value = Value.Default(ConfigSchema, interpolated);
  value = Value.Convert(ConfigSchema, value);
  value = Value.Clean(ConfigSchema, value);
  if (!check.Check(value)) {
    throw invalid(file, describe(ConfigSchema, value));
  }
  const config = value as Config;
  problems.push(...crossChecks(config));
  if (problems.length) throw invalid(file, problems);
  warnings.push(...advice(config, { jobTimeoutSet, linkingSet }));
  return { config: liveConfig(config), file, warnings };
}

function hasKey(value: unknown, keys: readonly string[]): boolean {
  let at = value;
  for (const k of keys) {
    if (at === null || typeof at !== 'object' || !Object.prototype.hasOwnProperty.call(at, k)) return false;
    at = (at as Record<string, unknown>)[k];
  }
  return true;
}

/**
 * Settings that are valid but do not do what they seem to (warned at start, not refused):
 * a `scheduler.job_timeout_seconds` written in the file over the query timeout that caps it
 * (the default 300 s under a lower query.timeout is the documented cap, not warned about);
 * plugins.auth without plugins.auth.require_login (per-person grants, and an open door beside
 * them on the server's own role).
 */
export function advice(c: Config, opts: { jobTimeoutSet?: boolean; linkingSet?: readonly string[] } = {}): string[] {
  const out: string[] = [];
  if (c.catalog.linking === 'model') {
    const route = resolveRoute(c, 'table_selection');
    const missing = missingCredentials(c, route.provider);
    if (missing) out.push(`catalog.linking is "model", but the model it asks (task table_selection: ${route.provider}) is not configured (${missing}): every question falls back to the lexical ranking. Configure that provider, route table_selection to one that is (model_routing.table_selection), or set catalog.linking: lexical.`);
  } else if (opts.linkingSet?.length) {
    out.push(`${opts.linkingSet.join(', ')} ${opts.linkingSet.length === 1 ? 'has' : 'have'} no effect while catalog.linking is "lexical" (no model picks the tables): set catalog.linking: model to use ${opts.linkingSet.length === 1 ? 'it' : 'them'}, or remove ${opts.linkingSet.length === 1 ? 'it' : 'them'}.`);
  }
  const provider = c.database.provider;
  const own = c.database[provider].timeout;
  const ceiling = own ?? c.query.timeout;
  if (opts.jobTimeoutSet !== false && c.scheduler.job_timeout_seconds > ceiling) {
    const key = own !== undefined ? `database.${provider}.timeout` : 'query.timeout';
    out.push(`scheduler.job_timeout_seconds (${c.scheduler.job_timeout_seconds} s) is over ${key} (${ceiling} s), the ceiling of every query: a scheduled query is cancelled after ${ceiling} s. Raise ${key} or lower job_timeout_seconds.`);
  }
  if (c.plugins.auth.enabled && !c.plugins.auth.require_login) {
    out.push('plugins.auth is on but plugins.auth.require_login is false: anonymous callers of /api/query, /api/tables and /query' +
      `${c.plugins.auth.auto_session.enabled ? ', and auto sessions,' : ''} read every table the server's own database role may read, whatever a person's own grants say. ` +
      'Set plugins.auth.require_login: true to make every question need a login (docs/security.md, edge round 3).');
  }
  return out;
}

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/g;

function interpolate(value: unknown, at: string, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(VAR, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined) return v;
      if (fallback !== undefined) return fallback;
      problems.push(`${at || '(root)'}: the environment variable ${name} is not set (write \${${name}:default} to make it optional)`);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, `${at}[${i}]`, env, problems));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, at ? `${at}.${k}` : k, env, problems);
    return out;
  }
  return value;
}

type Node = TSchema & {
  type?: string;
  properties?: Record<string, Node>;
  patternProperties?: Record<string, Node>;
  items?: Node;
  anyOf?: Node[];
};

function unknownKeys(schema: Node, value: unknown, at: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  if (schema.anyOf) {
    const objects = schema.anyOf.filter((s) => s.properties);
    return objects.length === 1 && objects[0] ? unknownKeys(objects[0], value, at) : [];
  }
  if (Array.isArray(value)) {
    return schema.items ? value.flatMap((v, i) => unknownKeys(schema.items as Node, v, `${at}[${i}]`)) : [];
  }
  const out: string[] = [];
  if (schema.properties) {
    for (const [k, v] of Object.entries(value)) {
      const key = at ? `${at}.${k}` : k;
      const child = schema.properties[k];
      if (!child) out.push(`${key}: unknown key (ignored)`);
      else out.push(...unknownKeys(child, v, key));
    }
  } else if (schema.patternProperties) {
    const child = Object.values(schema.patternProperties)[0];
    if (child) for (const [k, v] of Object.entries(value)) out.push(...unknownKeys(child, v, at ? `${at}.${k}` : k));
  }
  return out;
}

function describe(schema: TSchema, value: unknown): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const e of check.Errors(value)) {
    const key = pointerToPath(e.instancePath);
    if (seen.has(key)) continue;
    seen.add(key);
    const params = e.params as { allowedValues?: unknown[]; requiredProperties?: string[] } | undefined;
    let message = e.message;
    if (e.keyword === 'enum' && params?.allowedValues) message = `must be one of ${params.allowedValues.join(', ')}`;
    if (e.keyword === 'required' && params?.requiredProperties) {
      for (const p of params.requiredProperties) out.push(`${key ? key + '.' : ''}${p}: is required`);
      continue;
    }
    if (e.keyword === 'anyOf') message = 'has the wrong shape';
    out.push(`${key || '(root)'}: ${message}`);
  }
  void schema;
  return out.length ? out : ['the file does not match the configuration schema'];
}

function pointerToPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((t) => (/^\d+$/.test(t) ? `[${t}]` : `.${t}`))
    .join('')
    .replace(/^\./, '');
}

function crossChecks(c: Config): string[] {
  const out: string[] = [];
  if (c.query.max_limit < c.query.default_limit) out.push('query.max_limit: must be at least query.default_limit');
  // a shorter part of the request than the whole would never strike: refused, not ignored
  if (c.app.headers_timeout_seconds > c.app.request_timeout_seconds) out.push('app.headers_timeout_seconds: must not exceed app.request_timeout_seconds (the headers are part of the request)');
  if (c.app.body_idle_timeout_seconds > c.app.request_timeout_seconds) out.push('app.body_idle_timeout_seconds: must not exceed app.request_timeout_seconds (the body is part of the request)');
  if (c.email.smtp.use_tls && c.email.smtp.use_ssl) {
    out.push('email.smtp: use_tls (STARTTLS, port 587) and use_ssl (port 465) are not to be mixed; set one of them to false');
  }
  if (c.plugins.assistant_login.enabled && !c.ldap.enabled) out.push('plugins.assistant_login.enabled: requires ldap.enabled: true');
  if (c.plugins.auth.require_login && !c.plugins.auth.enabled) out.push('plugins.auth.require_login: requires plugins.auth.enabled: true (without plugins.auth there is no login to require; query.require_session guards the legacy /query)');
  if (c.plugins.auth.require_login && c.plugins.auth.auto_session.enabled) {
    out.push('plugins.auth.auto_session.enabled: an auto session is a session without a login, which plugins.auth.require_login refuses; turn one of them off');
  }
  const pg = c.database.postgresql;
  if (pg.min_connections > pg.max_connections) out.push('database.postgresql.min_connections: must not exceed max_connections');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: c.scheduler.timezone });
  } catch {
    out.push('scheduler.timezone: not a known IANA time zone');
  }
  out.push(...opsConfigProblems(c));
  return out;
}

function invalid(file: string, problems: string[]): CortadoError {
  const rel = path.relative(process.cwd(), file) || file;
  return new CortadoError('CONFIG_INVALID', `invalid configuration in ${rel}:\n${problems.map((p) => `  - ${p}`).join('\n')}`, {
    problems,
  });
}

/** Validate a whole config object (after a runtime change): the problems, key paths first. */
export function configProblems(value: unknown): string[] {
  if (!check.Check(value)) return describe(ConfigSchema, value);
  return crossChecks(value as Config);
}
