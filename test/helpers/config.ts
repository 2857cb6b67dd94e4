/** Test configurations: the shipped defaults plus what a test needs, as a real parsed Config. */
import YAML from 'yaml';
import { parseConfig } from '../../config/load.js';
import { replaceSetting } from '../../config/current.js';
import type { Config } from '../../config/schema.js';

type Plain = Record<string, unknown>;

function isPlain(v: unknown): v is Plain {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function deepMerge(a: Plain, b: Plain): Plain {
  const out: Plain = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isPlain(v) && isPlain(out[k]) ? deepMerge(out[k] as Plain, v) : v;
  return out;
}

export interface TestConfigOptions {
  natsUrl: string;
  /** a PostgreSQL database to query */
  db?: { host: string; port: number; name: string; user: string };
  /** the fake LLM server's base URL */
  llmUrl?: string;
  /** anything else, merged last */
  extra?: Plain;
}

export function testConfigObject(opts: TestConfigOptions): Plain {
  let obj: Plain = {
    app: { name: 'Cortado test', host: '127.0.0.1', port: 0, log_level: 'silent', shutdown_grace_seconds: 5 },
    bus: { url: opts.natsUrl, prefix: 'cortado', autostart: false },
    llm: { provider: 'anthropic', anthropic: { api_key: opts.llmUrl ? 'test-key' : '', model: 'claude-test', base_url: opts.llmUrl ?? '', timeout: 5, max_retries: 1 } },
    database: {
      provider: 'postgresql',
      // the suite connects as the clusters' superuser / admin account everywhere, which the
      // start-up privilege check (actors/executor/privilege.ts) refuses by default; the privilege
      // tests (test/actors/privilege.test.ts) set it back to false
      allow_privileged_role: true,
      postgresql: opts.db
        ? { host: opts.db.host, port: opts.db.port, database: opts.db.name, user: opts.db.user, min_connections: 1, max_connections: 4 }
        : { host: '127.0.0.1', port: 1, database: 'none', user: 'none', min_connections: 0 },
    },
    query: { timeout: 10 },
  };
  if (opts.extra) obj = deepMerge(obj, opts.extra);
  return obj;
}

export function testConfig(opts: TestConfigOptions): Config {
  return parseConfig(YAML.stringify(testConfigObject(opts)), 'test-config.yaml', {}).config;
}

/**
 * A run-time change in a test, as an admin override would make it: through the one change path
 * (config/current.ts replaceSetting), without the start-only check (a test may stand in for a
 * restart). The loaded config is frozen: an assignment throws.
 */
export function setConfig(config: Config, key: string, value: unknown): void {
  replaceSetting(config, key, value);
}
