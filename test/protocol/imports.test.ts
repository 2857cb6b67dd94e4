/**
 * The seams, checked: every .ts file of the source tree (test/ and bench/ aside) is parsed and
 * each of its imports (static, `export … from`, `import type`, dynamic `import(…)`, `require(…)`
 * and `import('…').T` in types) is held against these rules:
 *
 * - actors never import each other: a file in actors/<a>/ imports nothing of actors/<b>/ nor the
 *   composition root actors/index.ts; actors/lib/ and actors/runtime/ are shared, and import no
 *   actor themselves (runtime may import actors/index.ts: it starts them);
 * - edge/ imports no actor and no storage: it reaches them over the bus (no exception today);
 * - protocol/ is the contract only: it imports typebox and itself, nothing else (no node:
 *   module, no package, no other folder of ours);
 * - layers: runtime/ imports none of config/, store/, actors/, edge/, cli/; config/ none of
 *   store/, actors/, edge/, cli/; store/ none of actors/, edge/, cli/;
 * - NATS (`@nats-io/*`) only in the bus files (runtime/bus.ts and its parts:
 *   runtime/bus-<part>.ts or runtime/bus/); uWebSockets.js only in edge/http/server.ts;
 * - each SDK only in the actor it serves: LLM SDKs in actors/llm/, database drivers in
 *   actors/executor/ (and `pg` in store/ for config_db; pg, trino-client and the BigQuery client
 *   in actors/ops/ for the operations console's own read-only clients), `ldapts` in identity, settings and
 *   actors/lib/ldap/client.ts (the directory client both use), `nodemailer` in actors/mailer/;
 * - an import whose module is computed (`import(name)`) cannot be checked, so it is refused.
 *
 * The rules are plain functions over (path, source text), so the cases below feed them files
 * that break each rule: the check is shown to fail before it is trusted to pass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { ROOT } from '../../config/load.js';

interface Source {
  /** relative to the repository root, with forward slashes */
  path: string;
  text: string;
}

interface Import {
  /**
   * undefined: the module name is computed; `dir/*`: a template whose fixed head names the
   * folder or package (`node-sql-parser/build/${name}.js` → `node-sql-parser/build/*`)
   */
  spec: string | undefined;
  line: number;
}

interface Violation {
  file: string;
  line: number;
  spec: string;
  rule: string;
  why: string;
}

// ---- reading imports ----------------------------------------------------------------------------

function importsOf(file: Source): Import[] {
  const sf = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Import[] = [];
  const lineOf = (node: ts.Node): number => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const named = (node: ts.Node, expr: ts.Node | undefined): void => {
    let spec: string | undefined;
    if (expr && ts.isStringLiteralLike(expr)) spec = expr.text;
    else if (expr && ts.isTemplateExpression(expr)) spec = templateHead(expr.head.text);
    out.push({ spec, line: lineOf(node) });
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      named(node, node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      named(node, node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      named(node, node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      named(node, node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The folder or package a template's fixed head names (`dir/*`), or undefined when it names none. */
function templateHead(head: string): string | undefined {
  const cut = head.lastIndexOf('/');
  if (cut < 0) return undefined;
  const dir = head.slice(0, cut + 1);
  if (dir.startsWith('@') && dir.split('/').length < 3) return undefined; // `@scope/${x}`: no package named
  return `${dir}*`;
}

// ---- the rules ----------------------------------------------------------------------------------

const SHARED_ACTOR_DIRS = new Set(['lib', 'runtime']);
const COMPOSITION_ROOT = 'actors/index';
const BUS_FILES = /^runtime\/(bus(-[a-z0-9-]+)?\.ts$|bus\/)/;
/** what protocol/ may import: typebox (and its subpaths) and its own files */
const CONTRACT_PACKAGES = new Set(['typebox']);
const HTTP_SERVER = 'edge/http/server.ts';

/** package → where it may be imported (path prefixes), and whose it is */
const SDKS: ReadonlyArray<{ pkg: (name: string) => boolean; name: string; allowed: readonly string[]; home: string }> = [
  ...['@anthropic-ai/sdk', 'openai', '@google/genai'].map((name) => ({ pkg: (p: string) => p === name, name, allowed: ['actors/llm/'], home: 'the llm actor' })),
  // the ops actor reads the warehouses' administrative views on clients of its own (docs/ops.md)
  { pkg: (p) => p === 'pg', name: 'pg', allowed: ['actors/executor/', 'store/', 'actors/ops/'], home: 'the executor, store/ (config_db) and the ops actor' },
  ...['trino-client', '@google-cloud/bigquery'].map((name) => ({ pkg: (p: string) => p === name, name, allowed: ['actors/executor/', 'actors/ops/'], home: 'the executor and the ops actor' })),
  { pkg: (p) => p === 'mysql2', name: 'mysql2', allowed: ['actors/executor/'], home: 'the executor' },
  { pkg: (p) => p.startsWith('@electric-sql/'), name: '@electric-sql/*', allowed: ['actors/executor/'], home: 'the executor' },
  { pkg: (p) => p === 'ldapts', name: 'ldapts', allowed: ['actors/identity/', 'actors/settings/', 'actors/lib/ldap/client.ts'], home: 'identity and settings (through actors/lib/ldap/client.ts)' },
  { pkg: (p) => p === 'nodemailer', name: 'nodemailer', allowed: ['actors/mailer/'], home: 'the mailer' },
];

/** What may not be imported from each top folder (the layers). */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  runtime: ['config', 'store', 'actors', 'edge', 'cli'],
  config: ['store', 'actors', 'edge', 'cli'],
  store: ['actors', 'edge', 'cli'],
  edge: ['actors', 'store'],
};

/** `@scope/name/x` → `@scope/name`, `name/x` → `name`; undefined for relative and node: modules. */
function packageOf(spec: string): string | undefined {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** `actors/<dir>/…` → dir; undefined for anything else (actors/index.ts included). */
function actorDir(p: string): string | undefined {
  const m = /^actors\/([^/]+)\//.exec(p);
  return m?.[1];
}

function checkImport(file: string, imp: Import): Omit<Violation, 'file' | 'line' | 'spec'> | undefined {
  if (imp.spec === undefined) return { rule: 'computed-import', why: 'the module of this import is computed, so no rule can check it: name it' };
  const spec = imp.spec;
  const pkg = packageOf(spec);
  if (file.startsWith('protocol/')) {
    const refused = { rule: 'protocol-is-contract', why: `protocol/ is the contract: it imports typebox and itself only, and ${spec} is neither (I/O belongs in runtime/)` };
    if (spec.startsWith('node:') || (pkg !== undefined && !CONTRACT_PACKAGES.has(pkg))) return refused;
    if (pkg === undefined && !spec.startsWith('/')) {
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
      if (!to.startsWith('protocol/')) return refused;
    }
  }
  if (pkg !== undefined) {
    if (pkg.startsWith('@nats-io/') && !BUS_FILES.test(file)) {
      return { rule: 'nats-in-the-bus', why: `${pkg} outside the bus files (runtime/bus.ts, runtime/bus-*.ts): everything else uses the Bus` };
    }
    if (pkg === 'uWebSockets.js' && file !== HTTP_SERVER) {
      return { rule: 'uws-in-the-server', why: `uWebSockets.js outside ${HTTP_SERVER}: the rest of the edge uses its HttpServer seam` };
    }
    const sdk = SDKS.find((s) => s.pkg(pkg));
    if (sdk && !sdk.allowed.some((a) => file === a || file.startsWith(a))) {
      return { rule: 'sdk-in-its-actor', why: `${sdk.name} belongs to ${sdk.home} (${sdk.allowed.join(', ')})` };
    }
    return undefined;
  }
  if (spec.startsWith('/')) return { rule: 'absolute-import', why: 'an absolute path import: use a relative one' };
  // `.js` in a specifier is the `.ts` file beside it (NodeNext)
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.[cm]?[jt]s$/, '');
  if (target.startsWith('..')) return undefined;
  const fromTop = file.split('/')[0] ?? '';
  const toTop = target.split('/')[0] ?? '';
  if (fromTop !== toTop && LAYERS[fromTop]?.includes(toTop)) {
    return { rule: fromTop === 'edge' ? 'edge-imports-no-actor' : 'layers', why: `${fromTop}/ must not import ${toTop}/ (${target}.ts)${fromTop === 'edge' ? ': the edge reaches actors over the bus' : ''}` };
  }
  const from = actorDir(file);
  const to = actorDir(target);
  if (from === undefined || fromTop !== 'actors') return undefined;
  const fromShared = SHARED_ACTOR_DIRS.has(from);
  if (target === COMPOSITION_ROOT && from !== 'runtime') {
    return { rule: 'actors-talk-over-the-bus', why: `actors/${from} imports ${COMPOSITION_ROOT}.ts, which loads every actor` };
  }
  if (to === undefined || to === from || SHARED_ACTOR_DIRS.has(to)) return undefined;
  if (fromShared) return { rule: 'actors-talk-over-the-bus', why: `actors/${from}/ is shared by every actor and must not import the ${to} actor (${target}.ts)` };
  return { rule: 'actors-talk-over-the-bus', why: `the ${from} actor imports the ${to} actor's ${target}.ts: actors talk over the bus; shared code lives in actors/lib/, storage in store/` };
}

function check(files: readonly Source[]): Violation[] {
  const out: Violation[] = [];
  for (const f of files) {
    for (const imp of importsOf(f)) {
      const v = checkImport(f.path, imp);
      if (v) out.push({ file: f.path, line: imp.line, spec: imp.spec ?? '(computed)', ...v });
    }
  }
  return out;
}

const show = (v: Violation): string => `${v.file}:${v.line} imports '${v.spec}' [${v.rule}] ${v.why}`;

// ---- the source tree ----------------------------------------------------------------------------

/** Not source: tests and benchmarks may reach anything; the rest is not ours or not code. */
const SKIP_TOP = new Set(['node_modules', 'test', 'bench', 'data', 'docs']);

function sourceFiles(dir = ROOT): Source[] {
  const out: Source[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    const rel = path.relative(ROOT, full).split(path.sep).join('/');
    if (e.name.startsWith('.')) continue;
    if (e.isDirectory()) {
      if (!(dir === ROOT && SKIP_TOP.has(e.name))) out.push(...sourceFiles(full));
    } else if (/\.[cm]?ts$/.test(e.name)) {
      out.push({ path: rel, text: readFileSync(full, 'utf8') });
    }
  }
  return out;
}

// ---- the rules fail on violations ----------------------------------------------------------------

t.test('each rule fails on a file that breaks it, and passes what it allows', async (t) => {
  const cases: Array<[string, string, string | undefined]> = [
    // [file, source, the rule it breaks (undefined: allowed)]
    ['actors/audit/actor.ts', "import { openStore } from '../identity/store/index.js';", 'actors-talk-over-the-bus'],
    ['actors/audit/handle.ts', "import type { Store } from '../identity/store/store.js';", 'actors-talk-over-the-bus'],
    ['actors/settings/handle.ts', "export { ldapLogin } from '../identity/ldap.js';", 'actors-talk-over-the-bus'],
    ['actors/masking/handle.ts', "const m = await import('../executor/guard/index.js');", 'actors-talk-over-the-bus'],
    ['actors/alerts/score.ts', "type R = import('../masking/strategies.js').Rule;", 'actors-talk-over-the-bus'],
    ['actors/mailer/actor.ts', "import { ACTOR_MODULES } from '../index.js';", 'actors-talk-over-the-bus'],
    ['actors/lib/ldap/client.ts', "import { SessionStore } from '../../identity/sessions.js';", 'actors-talk-over-the-bus'],
    ['actors/runtime/host.ts', "import { start } from '../executor/actor.js';", 'actors-talk-over-the-bus'],
    ['actors/settings/handle.ts', "import { sealForRequest } from '../lib/crypto/secrets.js';", undefined],
    ['actors/settings/actor.ts', "import type { ActorDeps } from '../runtime/actor.js';", undefined],
    ['actors/settings/actor.ts', "import { openStorage } from '../../store/index.js';", undefined],
    ['actors/identity/auth.ts', "import { tokenIssue } from './handle.js';", undefined],
    ['actors/executor/engines/pg.ts', "import { guardSql } from '../guard/index.js';", undefined],
    ['actors/runtime/host.ts', "import { ACTOR_MODULES } from '../index.js';", undefined],
    ['actors/index.ts', "const m = () => import('./identity/actor.js');", undefined],
    ['cli/run.ts', "import { startActors } from '../actors/runtime/host.js';", undefined],
    ['edge/http/routes/admin.ts', "import { configView } from '../../../actors/settings/handle.js';", 'edge-imports-no-actor'],
    ['edge/app.ts', "import { openStorage } from '../store/index.js';", 'edge-imports-no-actor'],
    ['edge/app.ts', "import { ConfigView } from '../protocol/subjects.js';", undefined],
    ['store/tokens.ts', "import { sha256 } from '../actors/identity/sessions.js';", 'layers'],
    ['runtime/bus.ts', "import type { Config } from '../config/schema.js';", 'layers'],
    ['config/load.ts', "import { openStorage } from '../store/index.js';", 'layers'],
    ['store/index.ts', "import type { Config } from '../config/schema.js';", undefined],
    ['actors/assistant/handle.ts', "import { connect } from '@nats-io/transport-node';", 'nats-in-the-bus'],
    ['edge/mcp/session.ts', "import type { KV } from '@nats-io/kv';", 'nats-in-the-bus'],
    ['runtime/outbox.ts', "import { jetstream } from '@nats-io/jetstream';", 'nats-in-the-bus'],
    ['runtime/bus.ts', "import { connect } from '@nats-io/transport-node';", undefined],
    ['runtime/bus-durable.ts', "import { jetstreamManager } from '@nats-io/jetstream';", undefined],
    ['runtime/bus/kv.ts', "import { Kvm } from '@nats-io/kv';", undefined],
    ['protocol/subjects.ts', "import { connect } from '@nats-io/transport-node';", 'protocol-is-contract'],
    ['protocol/define.ts', "import { pino } from 'pino';", 'protocol-is-contract'],
    ['protocol/schemas/ask.ts', "import client from 'prom-client';", 'protocol-is-contract'],
    ['protocol/errors.ts', "import { randomUUID } from 'node:crypto';", 'protocol-is-contract'],
    ['protocol/subjects.ts', "import type { Kv } from '../runtime/kv.js';", 'protocol-is-contract'],
    ['protocol/schemas/sql.ts', "import type { Config } from '../../config/schema.js';", 'protocol-is-contract'],
    ['protocol/define.ts', "import { Compile } from 'typebox/compile';", undefined],
    ['protocol/schemas/ask.ts', "import { OwnerString } from '../scope.js';", undefined],
    ['protocol/subjects.ts', "import * as I from './schemas/identity.js';", undefined],
    ['runtime/log.ts', "import { pino } from 'pino';", undefined],
    ['runtime/metrics.ts', "import client from 'prom-client';", undefined],
    ['runtime/tracing.ts', "import { trace } from '@opentelemetry/api';", undefined],
    ['runtime/bus-events.ts', "import { progressSubject } from '../protocol/subjects.js';", undefined],
    ['runtime/kv.ts', "import type { Config } from '../config/schema.js';", 'layers'],
    ['runtime/log.ts', "import { startActors } from '../actors/runtime/host.js';", 'layers'],
    ['store/audit.ts', "import type { Logger } from '../runtime/log.js';", undefined],
    ['edge/http/routes/query.ts', "import uws from 'uWebSockets.js';", 'uws-in-the-server'],
    ['edge/http/server.ts', "import uws from 'uWebSockets.js';", undefined],
    ['actors/sqlgen/handle.ts', "import Anthropic from '@anthropic-ai/sdk';", 'sdk-in-its-actor'],
    ['edge/mcp/tools/ask.ts', "import OpenAI from 'openai';", 'sdk-in-its-actor'],
    ['actors/insights/handle.ts', "import { GoogleGenAI } from '@google/genai';", 'sdk-in-its-actor'],
    ['actors/audit/handle.ts', "import pg from 'pg';", 'sdk-in-its-actor'],
    ['actors/catalog/discover.ts', "import mysql from 'mysql2/promise';", 'sdk-in-its-actor'],
    ['actors/catalog/handle.ts', "import { Trino } from 'trino-client';", 'sdk-in-its-actor'],
    ['actors/assistant/actor.ts', "import { BigQuery } from '@google-cloud/bigquery';", 'sdk-in-its-actor'],
    ['cli/main.ts', "import { PGlite } from '@electric-sql/pglite';", 'sdk-in-its-actor'],
    ['edge/http/routes/admin.ts', "import { Client } from 'ldapts';", 'sdk-in-its-actor'],
    ['actors/alerts/handle.ts', "import nodemailer from 'nodemailer';", 'sdk-in-its-actor'],
    ['actors/alerts/handle.ts', "const { createTransport } = require('nodemailer');", 'sdk-in-its-actor'],
    ['actors/llm/providers/anthropic.ts', "import Anthropic from '@anthropic-ai/sdk';", undefined],
    ['actors/executor/engines/postgresql.ts', "import pg from 'pg';", undefined],
    ['store/postgres.ts', "import pg from 'pg';", undefined],
    ['actors/executor/embedded/server.ts', "import { PGLiteSocketServer } from '@electric-sql/pglite-socket';", undefined],
    ['actors/lib/ldap/client.ts', "import { Client } from 'ldapts';", undefined],
    ['actors/settings/handle.ts', "import { Client } from 'ldapts';", undefined],
    ['actors/mailer/handle.ts', "import nodemailer from 'nodemailer/lib/smtp-transport/index.js';", undefined],
    ['actors/executor/engines/index.ts', 'const name = pick(); const m = await import(name);', 'computed-import'],
    ['actors/executor/engines/index.ts', 'const m = await import(`${dir}/pg.js`);', 'computed-import'],
    ['actors/executor/engines/index.ts', 'const m = await import(`./${name}.js`);', undefined],
    ['actors/masking/lineage-nsp.ts', 'const mod = require(`node-sql-parser/build/${build}.js`);', undefined],
    ['actors/masking/handle.ts', 'const m = await import(`../executor/guard/${dialect}.js`);', 'actors-talk-over-the-bus'],
    ['actors/alerts/handle.ts', 'const m = await import(`nodemailer/lib/${x}.js`);', 'sdk-in-its-actor'],
    // text that only looks like an import is not one
    ['actors/audit/handle.ts', "// import { x } from '../identity/handle.js'\nconst s = \"import pg from 'pg'\";", undefined],
  ];
  for (const [file, text, rule] of cases) {
    const found = check([{ path: file, text }]);
    if (rule === undefined) t.same(found.map(show), [], `allowed: ${file}: ${text}`);
    else t.same(found.map((v) => v.rule), [rule], `refused (${rule}): ${file}: ${text}`);
  }

  // a fake tree with one violation among clean files: exactly that one is reported, with where
  const tree: Source[] = [
    { path: 'actors/audit/actor.ts', text: "import { openStorage } from '../../store/index.js';\nimport { query } from './handle.js';\n" },
    { path: 'actors/audit/handle.ts', text: "import type { AuditEntry } from '../../store/index.js';\n\nimport { safeEqual } from '../identity/handle.js';\n" },
    { path: 'store/index.ts', text: "import pg from 'pg';\nimport type { Config } from '../config/schema.js';\n" },
  ];
  const found = check(tree);
  t.equal(found.length, 1, found.map(show).join('\n'));
  t.match(found[0], { file: 'actors/audit/handle.ts', line: 3, spec: '../identity/handle.js', rule: 'actors-talk-over-the-bus' });
  t.match(show(found[0] as Violation), /the audit actor imports the identity actor's actors\/identity\/handle\.ts/);
});

// ---- the source tree keeps them -------------------------------------------------------------------

t.test('the source tree keeps every import rule', async (t) => {
  const files = sourceFiles();
  const imports = files.flatMap((f) => importsOf(f).map((i) => `${f.path} ${i.spec ?? ''}`));
  // the walk sees the tree: the files and imports the rules are about are among what it read
  t.ok(files.length > 150, `${files.length} files read`);
  for (const seen of ['runtime/bus-connection.ts @nats-io/transport-node', 'runtime/log.ts pino', 'protocol/define.ts typebox/compile', 'edge/http/server.ts uWebSockets.js', 'store/postgres.ts pg', 'actors/index.ts ./settings/actor.js']) {
    t.ok(imports.includes(seen), `saw ${seen}`);
  }
  t.notOk(files.some((f) => f.path.startsWith('test/') || f.path.startsWith('node_modules/')), 'tests and packages are not walked');
  const violations = check(files);
  for (const v of violations) t.fail(show(v));
  t.equal(violations.length, 0, `${imports.length} imports in ${files.length} files, none crossing a seam`);
});
