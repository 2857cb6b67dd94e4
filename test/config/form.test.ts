/**
 * The config schema as a form (config/form.ts, GET /admin/config/schema): every key of the schema
 * an override can name is a field of its section, with the input its type needs; a start-only key
 * says why (and only those); a secret is write-only, with no default sent; every description names
 * a key that exists, so a renamed key cannot leave a stale line behind.
 */
import t from 'tap';
import { CONFIG_DESCRIPTIONS } from '../../config/descriptions.js';
import { configForm, type ConfigField } from '../../config/form.js';
import { isSecretKey, schemaHasKey, startOnlyReason } from '../../config/runtime.js';

const form = configForm();
const fields = new Map<string, ConfigField>(form.sections.flatMap((s) => s.fields.map((f) => [f.key, f] as const)));

t.test('one section per top-level key but those with tabs of their own; each field in its section', async (t) => {
  const keys = form.sections.map((s) => s.key);
  t.ok(keys.includes('query') && keys.includes('app') && keys.includes('email'));
  t.notOk(keys.includes('prompts'), 'the prompts have their own tab');
  t.notOk(keys.includes('ldap'), 'so has LDAP');
  for (const s of form.sections) {
    t.ok(s.title && !s.title.includes('_'), `${s.key}: a title for people (${s.title})`);
    for (const f of s.fields) t.ok(f.key.startsWith(`${s.key}.`) && schemaHasKey(f.key), `${f.key} is a key of ${s.key}`);
  }
  t.equal(fields.size, form.sections.reduce((n, s) => n + s.fields.length, 0), 'no key twice');
});

t.test('the input follows the type', async (t) => {
  t.match(fields.get('query.default_limit'), { kind: 'integer', minimum: 1, default: 100, label: 'Default limit' });
  t.match(fields.get('query.max_corrections'), { kind: 'integer', minimum: 0, maximum: 5 });
  t.match(fields.get('tracing.sample_ratio'), { kind: 'number', minimum: 0, maximum: 1 });
  t.match(fields.get('insights.enabled'), { kind: 'boolean', default: true });
  t.match(fields.get('insights.mode'), { kind: 'enum', options: ['llm_only', 'statistical_only', 'hybrid'] });
  t.match(fields.get('export.formats'), { kind: 'list', options: ['csv', 'excel', 'html'] });
  t.match(fields.get('cors.allow_origins'), { kind: 'list' });
  t.equal(fields.get('cors.allow_origins')?.options, undefined, 'a free list has no fixed values');
  t.match(fields.get('email.smtp.host'), { kind: 'string', label: 'SMTP › Host' });
  t.match(fields.get('catalog.synonyms'), { kind: 'json' });
  t.match(fields.get('app.max_body_kb'), { label: 'Max body (KB)' });
});

t.test('restart-only keys say why, and only they; secrets are write-only', async (t) => {
  for (const f of fields.values()) {
    t.equal(f.restart, startOnlyReason(f.key), `${f.key}: ${f.restart ?? 'at run time'}`);
    if (isSecretKey(f.key)) {
      t.equal(f.secret, true, `${f.key} is a secret`);
      t.equal(f.default, undefined, `${f.key}: no default sent`);
    } else t.equal(f.secret, undefined, `${f.key} is no secret`);
  }
  t.match(fields.get('app.port'), { restart: /listens at start/ });
  t.match(fields.get('database.postgresql.password'), { secret: true, restart: /pools/ });
  t.match(fields.get('llm.anthropic.api_key'), { secret: true });
});

t.test('every description names a key or section of the form; the form uses them', async (t) => {
  const sections = new Set(form.sections.map((s) => s.key));
  for (const key of Object.keys(CONFIG_DESCRIPTIONS)) {
    const concrete = key.replace('llm.*.', 'llm.anthropic.');
    t.ok(fields.has(concrete) || sections.has(key), `${key} is in the form`);
  }
  t.match(fields.get('query.max_corrections')?.description, /rewrite SQL the database rejected/);
  t.match(fields.get('llm.openai.max_retries')?.description, /retries/, 'a provider key is described once for all of them');
  t.ok([...fields.values()].filter((f) => f.description).length >= 100, 'most of the keys people change are described');
});
