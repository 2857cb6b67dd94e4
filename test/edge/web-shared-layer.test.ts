/**
 * The pages' scripts (edge/web/static) share one small layer, lib/: one el(), one HTTP client
 * (CSRF header, session, error model), one set of formatters. Each name that layer exports is
 * defined there and nowhere else; no page calls fetch() itself (every request goes through
 * lib/api.js, so the CSRF header and the error model cannot be forgotten); and no function
 * grows back past a screenful or three (one was 571 lines, another 401).
 *
 * Read with TypeScript's parser (the files are plain JavaScript modules the browser loads as
 * they are), so a definition is found however it is written: a function declaration, an arrow
 * or function expression bound to a name, a class.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import ts from 'typescript';

const STATIC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../edge/web/static');
const LIB = 'lib/';
/** the longest a function may be, in lines: past this it is several things, and gets split into named pieces */
const MAX_FUNCTION_LINES = 200;
/** names the layer's earlier copies went by, which no page may define again either */
const FORMER_COPIES = ['el', 'icon', '$', 'api', 'apiError', 'getJson', 'client', 'call', 'request', 'svg', 'adoptCss', 'fmtTime', 'formatBytes', 'explain'];

function scripts(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return scripts(full, `${prefix}${name}/`);
    return name.endsWith('.js') ? [`${prefix}${name}`] : [];
  });
}

interface Definition { name: string; file: string; line: number; lines: number; topLevel: boolean }

/** Every named function or class a file defines (at any depth), with its length in lines. */
function definitions(file: string): { defs: Definition[]; fetches: number[]; exported: string[] } {
  const text = readFileSync(path.join(STATIC, file), 'utf8');
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const defs: Definition[] = [];
  const fetches: number[] = [];
  const exported: string[] = [];
  const lineOf = (pos: number): number => src.getLineAndCharacterOfPosition(pos).line + 1;
  const add = (name: string, node: ts.Node, depth: number): void => {
    const line = lineOf(node.getStart(src));
    defs.push({ name, file, line, lines: lineOf(node.getEnd()) - line + 1, topLevel: depth === 0 });
  };
  const isExported = (node: ts.Node): boolean => (ts.canHaveModifiers(node) ? ts.getModifiers(node) ?? [] : []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const visit = (node: ts.Node, depth: number): void => {
    if ((ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node)) && node.name) {
      add(node.name.text, node, depth);
      if (depth === 0 && isExported(node)) exported.push(node.name.text);
    } else if (ts.isVariableStatement(node) && depth === 0 && isExported(node)) {
      for (const d of node.declarationList.declarations) if (ts.isIdentifier(d.name)) exported.push(d.name.text);
    } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer
      && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer) || ts.isClassExpression(node.initializer))) {
      add(node.name.text, node.initializer, depth);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) && /^(window|globalThis|self)$/.test(callee.expression.getText(src)) ? callee.name.text : '';
      if (name === 'fetch') fetches.push(lineOf(node.getStart(src)));
    }
    const inner = ts.isFunctionLike(node) || ts.isClassLike(node) ? depth + 1 : depth;
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(src, 0);
  // any function-like node without a name is measured too (an IIFE, a callback)
  const measure = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && !defs.some((d) => d.line === lineOf(node.getStart(src)))) {
      const line = lineOf(node.getStart(src));
      defs.push({ name: '(anonymous)', file, line, lines: lineOf(node.getEnd()) - line + 1, topLevel: false });
    }
    ts.forEachChild(node, measure);
  };
  measure(src);
  return { defs, fetches, exported };
}

const files = scripts(STATIC);
const parsed = new Map(files.map((f) => [f, definitions(f)]));
const layer = files.filter((f) => f.startsWith(LIB));

t.test('the shared layer is there and the pages use it', async (t) => {
  t.same(layer.sort(), ['lib/api.js', 'lib/chart-model.js', 'lib/dashboards.js', 'lib/dom.js', 'lib/errors.js', 'lib/format.js'], 'lib/: DOM helpers, the API client, the chart model, the dashboards an answer is pinned to, the formatters, errors in words for people');
  const users = files.filter((f) => !f.startsWith(LIB) && /from '(\.\.?\/)+lib\//.test(readFileSync(path.join(STATIC, f), 'utf8')));
  t.ok(users.length >= 20, `most scripts import it (${users.length} of ${files.length})`);
});

t.test('each name the layer exports is defined in the layer only', async (t) => {
  const shared = new Map<string, string>();
  for (const f of layer) for (const name of parsed.get(f)!.exported) shared.set(name, f);
  for (const name of ['el', '$', 'icon', 'createApi', 'ApiError', 'readableMessage', 'formatInt', 'formatUsd', 'formatZoned']) {
    t.ok(shared.has(name), `${name} is exported by lib/`);
  }
  const watched = new Set([...shared.keys(), ...FORMER_COPIES]);
  const copies: string[] = [];
  for (const f of files) {
    if (f.startsWith(LIB)) continue;
    for (const d of parsed.get(f)!.defs) {
      if (!watched.has(d.name)) continue;
      copies.push(`${f}:${d.line} defines ${d.name}()${shared.has(d.name) ? ` (the one copy is in ${shared.get(d.name)})` : ' (a client or helper of its own: use lib/)'}`);
    }
  }
  t.same(copies, [], 'no page defines its own el(), api() or formatter');
});

t.test('only lib/api.js calls fetch()', async (t) => {
  const calls = files.flatMap((f) => parsed.get(f)!.fetches.map((line) => `${f}:${line}`)).filter((where) => !where.startsWith('lib/api.js:'));
  t.same(calls, [], 'every request goes through the one client (its CSRF header, session and error model)');
  t.ok(parsed.get('lib/api.js')!.fetches.length > 0, 'and the client does');
});

t.test(`no function is longer than ${MAX_FUNCTION_LINES} lines`, async (t) => {
  const long = files.flatMap((f) => parsed.get(f)!.defs.filter((d) => d.lines > MAX_FUNCTION_LINES).map((d) => `${f}:${d.line} ${d.name} is ${d.lines} lines`));
  t.same(long, [], 'split into named pieces');
});
