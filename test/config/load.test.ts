import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_CONFIG_PATH, loadConfigFile, parseConfig, resolveConfigPath, ROOT } from '../../config/load.js';
import { CortadoError } from '../../protocol/errors.js';

const MIN = 'llm: {provider: anthropic}\ndatabase: {provider: postgresql}\n';

function problems(yaml: string, env: Record<string, string> = {}): string {
  try {
    parseConfig(yaml, 'bad.yaml', env);
  } catch (err) {
    t.ok(err instanceof CortadoError && err.code === 'CONFIG_INVALID');
    return (err as Error).message;
  }
  return 'NO ERROR';
}

t.test('defaults: only llm and database are required', async (t) => {
  const { config, warnings } = parseConfig(MIN, 'min.yaml', {});
  t.equal(config.app.port, 8000);
  t.equal(config.app.host, '0.0.0.0');
  t.equal(config.query.default_limit, 100);
  t.equal(config.query.max_limit, 1000);
  t.equal(config.query.timeout, 300);
  t.equal(config.database.postgresql.min_connections, 1);
  t.equal(config.database.postgresql.max_connections, 10);
  t.equal(config.database.bigquery.max_results, 10000);
  t.equal(config.llm.anthropic.max_tokens, 4096);
  t.equal(config.llm.gemini.max_tokens, 1000);
  t.equal(config.rate_limiting.requests_per_window, 30);
  t.same(config.rate_limiting.protected_paths, ['/query', '/auth/query']);
  t.equal(config.scheduler.max_concurrent_jobs, 10);
  t.equal(config.email.max_recipients_per_email, 10);
  t.equal(config.export.max_file_size_mb, 25);
  t.equal(config.plugins.auth.session_ttl_minutes, 480);
  t.equal(config.plugins.auth.enforce_catalog_lock, true);
  t.equal(config.plugins.assistant_login.ttl_hours, 8);
  t.equal(config.mcp.security_alerts.risk_threshold, 70);
  t.equal(config.ui.sections.admin, true);
  t.equal(config.bus.prefix, 'cortado');
  t.same(warnings, []);
});

t.test('interpolation in every string, with conversion to the key type', async (t) => {
  const yaml = `app: {port: "\${PORT}", name: "\${NAME:Cortado Dev}", debug: "\${DEBUG:false}"}
llm: {provider: "\${LLM:anthropic}", anthropic: {api_key: "\${KEY:}"}}
database: {provider: postgresql, postgresql: {host: "db-\${REGION:eu}.internal"}}
`;
  const { config } = parseConfig(yaml, 'x.yaml', { PORT: '9001', DEBUG: 'true', REGION: 'us' });
  t.equal(config.app.port, 9001);
  t.equal(config.app.name, 'Cortado Dev');
  t.equal(config.app.debug, true);
  t.equal(config.llm.anthropic.api_key, '', 'an empty default is allowed');
  t.equal(config.database.postgresql.host, 'db-us.internal');
});

t.test('errors name the key path and what is wrong, never the value', async (t) => {
  t.match(problems('llm: {provider: claude}\ndatabase: {provider: postgresql}'), /llm\.provider: must be one of anthropic, gemini, vertexai, openai/);
  t.match(problems('database: {provider: postgresql}'), /llm: is required/);
  t.match(problems('llm: {provider: anthropic}'), /database: is required/);
  const missing = problems(`${MIN}admin: {password: "\${ADMIN_PASSWORD}"}`);
  t.match(missing, /admin\.password: the environment variable ADMIN_PASSWORD is not set/);
  const typed = problems(`${MIN}app: {port: "not-a-port"}\nquery: {max_limit: 10, default_limit: 100}`);
  t.match(typed, /app\.port: must be integer/);
  t.match(problems(`${MIN}query: {max_limit: 10, default_limit: 100}`), /query\.max_limit: must be at least query\.default_limit/);
  t.match(problems(`${MIN}email: {smtp: {use_tls: true, use_ssl: true}}`), /not to be mixed/);
  t.match(problems(`${MIN}plugins: {assistant_login: {enabled: true}}`), /requires ldap\.enabled/);
  t.match(problems(`${MIN}scheduler: {timezone: Mars/Olympus}`), /scheduler\.timezone/);
  t.match(problems('llm: [1, 2'), /not valid YAML at line 1/);
  t.match(problems('- just a list'), /must be a YAML mapping/);
  const secret = problems('llm: {provider: anthropic, anthropic: {max_tokens: "sk-ant-SECRET"}}\ndatabase: {provider: postgresql}');
  t.match(secret, /llm\.anthropic\.max_tokens: must be integer/);
  t.notMatch(secret, /SECRET/, 'the value is not printed');
});

t.test('unknown keys warn and are dropped', async (t) => {
  const { config, warnings } = parseConfig(`${MIN}app: {prot: 1}\nfancy: {x: 1}`, 'x.yaml', {});
  t.same(warnings.sort(), ['app.prot: unknown key (ignored)', 'fancy: unknown key (ignored)']);
  t.notOk('fancy' in config);
});

t.test('SPEC shapes: catalogs, overrides, routing, vendor-named keys', async (t) => {
  const { config, warnings } = parseConfig(`${MIN}
plugins: {auth: {allowed_catalogs: [{name: hive, allowed_schemas: [sales]}, {name: iceberg}]}}
rate_limiting: {path_overrides: {/auth/query: {requests_per_window: 10, window_seconds: 60}}}
model_routing: {sql: "openai:gpt-4.1", chat: {provider: gemini}}
ui: {sections: {bigquery-ops: false}}
email: {smtp: {custom_headers: {X-Team: data}}}
`, 'x.yaml', {});
  t.same(warnings, []);
  t.same(config.plugins.auth.allowed_catalogs, [{ name: 'hive', allowed_schemas: ['sales'] }, { name: 'iceberg', allowed_schemas: [] }]);
  t.equal(config.rate_limiting.path_overrides['/auth/query']?.requests_per_window, 10);
  t.equal(config.ui.sections['bigquery-ops'], false);
  t.same(config.email.smtp.custom_headers, { 'X-Team': 'data' });
});

t.test('the shipped config/config.yaml loads on a bare environment', async (t) => {
  const { config, warnings } = loadConfigFile(DEFAULT_CONFIG_PATH, {});
  t.same(warnings, []);
  t.equal(config.llm.provider, 'anthropic');
  t.equal(config.database.postgresql.embedded, true);
  t.equal(config.llm.anthropic.api_key, '');
});

t.test('--config and CORTADO_CONFIG choose the file', async (t) => {
  t.equal(resolveConfigPath(['--config', 'a.yaml'], {}), path.resolve('a.yaml'));
  t.equal(resolveConfigPath(['--config=b.yaml'], {}), path.resolve('b.yaml'));
  t.equal(resolveConfigPath([], { CORTADO_CONFIG: 'c.yaml' }), path.resolve('c.yaml'));
  t.equal(resolveConfigPath([], {}), DEFAULT_CONFIG_PATH);
});

t.test('cortado refuses to start on a bad file and names the key', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-cfg-'));
  const file = path.join(dir, 'bad.yaml');
  writeFileSync(file, 'llm: {provider: anthropic, anthropic: {api_key: sk-live-123}}\ndatabase: {provider: oracle}\n');
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', file], { encoding: 'utf8', timeout: 30_000 });
  t.equal(r.status, 2);
  t.match(r.stderr, /database\.provider: must be one of trino, postgresql, mysql, bigquery/);
  t.notMatch(r.stderr + r.stdout, /sk-live-123/);
  const missing = spawnSync(process.execPath, [path.join(ROOT, 'bin/cortado.js'), '--config', path.join(dir, 'nope.yaml')], { encoding: 'utf8', timeout: 30_000 });
  t.equal(missing.status, 2);
  t.match(missing.stderr, /cannot read the file \(ENOENT\)/);
});

t.test('catalog.linking: model with no model to ask, and linking settings under lexical, are warned about at start', async (t) => {
  const file = (extra: string) => `llm: {provider: anthropic, anthropic: {api_key: k}, openai: {model: gpt-x}}\ndatabase: {provider: postgresql}\n${extra}`;
  const fine = parseConfig(file('catalog: {linking: model}\n'), 'a.yaml', {});
  t.equal(fine.config.catalog.linking, 'model');
  t.same(fine.warnings, [], 'a configured provider: nothing to say');
  t.match(parseConfig(MIN, 'b.yaml', {}).config.catalog, { linking: 'lexical', linking_max_candidates: 100, linking_max_chars: 16000, linking_timeout_ms: 8000 }, 'the defaults');

  const bare = parseConfig('llm: {provider: anthropic}\ndatabase: {provider: postgresql}\ncatalog: {linking: model}\n', 'c.yaml', {});
  t.equal(bare.warnings.length, 1);
  t.match(bare.warnings[0], /catalog\.linking is "model", but the model it asks \(task table_selection: anthropic\) is not configured \(no API key in llm\.anthropic\.api_key\): every question falls back/);
  const routed = parseConfig(file('catalog: {linking: model}\nmodel_routing: {table_selection: openai}\n'), 'd.yaml', {});
  t.match(routed.warnings.join('\n'), /table_selection: openai\) is not configured \(neither llm\.openai\.api_key nor llm\.openai\.base_url\)/, 'the provider the task is routed to is the one checked');
  const local = parseConfig('llm: {provider: anthropic, anthropic: {api_key: k}, openai: {base_url: "http://127.0.0.1:9/v1"}}\ndatabase: {provider: postgresql}\ncatalog: {linking: model}\nmodel_routing: {table_selection: openai}\n', 'e.yaml', {});
  t.same(local.warnings, [], 'a local OpenAI-compatible server needs no key');

  const idle = parseConfig(file('catalog: {linking_max_candidates: 50, linking_timeout_ms: 2000}\nmodel_routing: {table_selection: claude-haiku-4-5}\n'), 'f.yaml', {});
  t.equal(idle.warnings.length, 1);
  t.match(idle.warnings[0], /catalog\.linking_max_candidates, catalog\.linking_timeout_ms, model_routing\.table_selection have no effect while catalog\.linking is "lexical"/);
  t.match(problems(file('catalog: {linking: llm}\n')), /catalog\.linking/, 'an unknown mode is refused');
  t.match(problems(file('catalog: {linking: model, linking_max_candidates: 0}\n')), /catalog\.linking_max_candidates/);
});
