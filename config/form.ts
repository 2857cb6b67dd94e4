/**
 * The config schema as a form for people (GET /admin/config/schema, the admin panel's Config
 * tab): every key an override can name, grouped by its top-level section, with the input it
 * needs (a switch, a choice, a number with its bounds, text, a list), what it means
 * (config/descriptions.ts), whether it needs a restart (config/runtime.ts START_ONLY: those the
 * server refuses at run time) and whether it is a secret (never sent back: write-only).
 * Derived from ConfigSchema once, so a key added to the schema shows up in the form by itself.
 */
import type { TSchema } from 'typebox';
import { configKeyOk } from '../protocol/schemas/identity.js';
import { CONFIG_DESCRIPTIONS } from './descriptions.js';
import { isSecretKey, startOnlyReason } from './runtime.js';
import { ConfigSchema } from './schema.js';

type Node = TSchema & {
  type?: string;
  enum?: unknown[];
  properties?: Record<string, Node>;
  items?: Node;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
};

/** The input a key needs: `json` is anything without a simple input (records, lists of objects, unions). */
export type FieldKind = 'boolean' | 'integer' | 'number' | 'string' | 'enum' | 'list' | 'json';

export interface ConfigField {
  /** the dotted key, as PUT /admin/config/:key names it */
  key: string;
  /** the key's name for people, within its section (`Max body (KB)`, `Smtp › Host`) */
  label: string;
  kind: FieldKind;
  /** enum: the values it takes; list: the values each item takes, when fixed */
  options?: string[];
  minimum?: number;
  maximum?: number;
  pattern?: string;
  /** the schema's default (never for a secret) */
  default?: unknown;
  description?: string;
  /** why it is read at start only: a run-time change is refused (403, details.start_only) */
  restart?: string;
  /** a secret: its value is never sent, only whether it is set (the form's field is write-only) */
  secret?: true;
}

export interface ConfigFormSection {
  key: string;
  title: string;
  description?: string;
  fields: ConfigField[];
}

/** Sections edited elsewhere in the panel: the prompts (with evaluation) and LDAP (with a connection test) have tabs of their own. */
const ELSEWHERE = new Set(['prompts', 'ldap']);

const TITLES: Record<string, string> = {
  app: 'Application', bus: 'Message bus (NATS)', audit: 'Audit trail', metrics: 'Metrics', tracing: 'Tracing',
  llm: 'Language models', model_routing: 'Model routing', database: 'Database', mcp: 'MCP', admin: 'Admin panel',
  ldap: 'LDAP / SSO', plugins: 'Sign-in and tenants', config_db: 'Config database', analytics: 'Analytics',
  scheduler: 'Scheduler', email: 'E-mail', export: 'Exports', insights: 'Insights', ops_agent: 'Warehouse operations console',
  alarms: 'Alarms', jira: 'Jira', rate_limiting: 'Rate limiting', query: 'Questions and queries', cors: 'CORS',
  ui: 'Pages shown', conversation: 'Conversation memory', catalog: 'Schema catalog',
};

/** Words written as people write them. */
const WORDS: Record<string, string> = {
  url: 'URL', ttl: 'TTL', sql: 'SQL', llm: 'LLM', ssl: 'SSL', tls: 'TLS', dn: 'DN', mb: '(MB)', kb: '(KB)', ms: '(ms)', id: 'ID',
  api: 'API', smtp: 'SMTP', mcp: 'MCP', otlp: 'OTLP', usd: 'USD', tb: 'TB', ldap: 'LDAP', db: 'DB', http: 'HTTP', ip: 'IP',
  sse: 'SSE', ai: 'AI', json: 'JSON', cors: 'CORS', mtok: 'million tokens', uid: 'UID', openai: 'OpenAI', vertexai: 'Vertex AI',
  bigquery: 'BigQuery', postgresql: 'PostgreSQL', mysql: 'MySQL', trino: 'Trino', anthropic: 'Anthropic', gemini: 'Gemini', jira: 'Jira',
  seconds: '(seconds)', minutes: '(minutes)', hours: '(hours)', days: '(days)',
};

function words(name: string): string {
  const w = name.split(/[_-]/).filter(Boolean).map((p) => WORDS[p] ?? p);
  const text = w.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function describe(key: string): string | undefined {
  if (CONFIG_DESCRIPTIONS[key]) return CONFIG_DESCRIPTIONS[key];
  // llm.<provider>.x is described once for every provider
  const parts = key.split('.');
  if (parts[0] === 'llm' && parts.length >= 3) return CONFIG_DESCRIPTIONS[['llm', '*', ...parts.slice(2)].join('.')];
  return undefined;
}

function kindOf(node: Node): Pick<ConfigField, 'kind' | 'options'> {
  if (Array.isArray(node.enum)) return { kind: 'enum', options: node.enum.map(String) };
  switch (node.type) {
    case 'boolean':
    case 'integer':
    case 'number':
    case 'string':
      return { kind: node.type };
    case 'array':
      if (node.items && Array.isArray(node.items.enum)) return { kind: 'list', options: node.items.enum.map(String) };
      if (node.items?.type === 'string') return { kind: 'list' };
      return { kind: 'json' };
    default:
      return { kind: 'json' };
  }
}

function field(key: string, label: string, node: Node): ConfigField {
  const f: ConfigField = { key, label, ...kindOf(node) };
  for (const k of ['minimum', 'maximum', 'pattern'] as const) if (node[k] !== undefined) (f as unknown as Record<string, unknown>)[k] = node[k];
  const secret = isSecretKey(key);
  if (secret) f.secret = true;
  else if (node.default !== undefined) f.default = node.default;
  const description = describe(key);
  if (description) f.description = description;
  const restart = startOnlyReason(key);
  if (restart) f.restart = restart;
  return f;
}

/** The leaves of a section: objects with fixed properties are walked; anything else is one field. */
function leaves(node: Node, key: string, label: string[]): ConfigField[] {
  if (node.type === 'object' && node.properties && Object.keys(node.properties).length > 0) {
    return Object.entries(node.properties).flatMap(([k, child]) => leaves(child, `${key}.${k}`, [...label, words(k)]));
  }
  // a key the API cannot name (`ui.sections.bigquery-ops`, the file's alias of bigquery_ops) is the file's alone
  return configKeyOk(key) ? [field(key, label.join(' › '), node)] : [];
}

let built: { sections: ConfigFormSection[] } | undefined;

/** The whole form, built once (the schema does not change while the process runs). */
export function configForm(): { sections: ConfigFormSection[] } {
  built ??= {
    sections: Object.entries((ConfigSchema as unknown as Node).properties ?? {})
      .filter(([k]) => !ELSEWHERE.has(k))
      .map(([k, node]) => {
        const s: ConfigFormSection = { key: k, title: TITLES[k] ?? words(k), fields: leaves(node, k, []) };
        const d = describe(k);
        if (d) s.description = d;
        return s;
      }),
  };
  return built;
}
