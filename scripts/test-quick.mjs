// npm run test:quick: only the test files a change touches, through scripts/test.sh (npm test).
// The change is what differs from main (commits since the branch left it, edits not committed
// yet, new files). A test file is touched when it changed itself, or when it imports a changed
// module, directly or through other modules (a scan of the relative `import … from`, `export …
// from` and `import(…)` of every .ts file). A changed file that is not TypeScript (a page's
// script, SQL, YAML, a fixture) touches the files that name it (its path from the project, or its
// file name). It is a quick first check, not a proof: `npm test` stays the run that counts.
//   npm run test:quick                  against main
//   npm run test:quick -- origin/main   against another base
//   TEST_QUICK_LIST=1 npm run test:quick   list the files only
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DIRS = ['protocol', 'runtime', 'config', 'store', 'actors', 'edge', 'cli', 'test', 'bench', 'scripts', 'bin'];
const base = process.argv[2] ?? 'main';

const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
let changed;
try {
  const since = git('merge-base', base, 'HEAD')[0];
  changed = new Set([...git('diff', '--name-only', since), ...git('ls-files', '--others', '--exclude-standard')]);
} catch {
  console.error(`test:quick: no branch or commit "${base}" to compare with`);
  process.exit(2);
}

/** every file under `dir` (relative to ROOT), node_modules left out */
function walk(dir, into = []) {
  let entries;
  try { entries = readdirSync(path.join(ROOT, dir), { withFileTypes: true }); } catch { return into; }
  for (const e of entries) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) { if (e.name !== 'node_modules') walk(rel, into); } else if (e.isFile()) into.push(rel);
  }
  return into;
}

const sources = DIRS.flatMap((d) => walk(d)).filter((f) => /\.(ts|mjs|js)$/.test(f) && !f.endsWith('.d.ts'));
const text = new Map(sources.map((f) => [f, readFileSync(path.join(ROOT, f), 'utf8')]));

// who imports whom: a relative specifier's `.js` is its `.ts` source when there is one
const importers = new Map();
const SPEC = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
for (const [file, src] of text) {
  for (const m of src.matchAll(SPEC)) {
    let target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]));
    if (target.endsWith('.js') && text.has(target.slice(0, -3) + '.ts')) target = target.slice(0, -3) + '.ts';
    if (!importers.has(target)) importers.set(target, new Set());
    importers.get(target).add(file);
  }
}

// the code of a test file or helper without its comments (a comment naming a file is no use of it)
const code = new Map([...text].filter(([f]) => f.startsWith('test/'))
  .map(([f, src]) => [f, src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')]));

// what a changed file touches: its importers, again and again; a file that is not imported (a
// page's script, SQL, YAML, a fixture), the tests and helpers that name it; the pages (edge/web/),
// every file that drives a browser
const touched = new Set();
const queue = [];
const reach = (f) => { if (!touched.has(f)) { touched.add(f); queue.push(f); } };
for (const f of changed) {
  if (importers.has(f) || (text.has(f) && f.startsWith('test/'))) { reach(f); continue; }
  if (text.has(f)) reach(f);
  // its file name as a word of its own (test.sh, not cortado-test.shop)
  const named = new RegExp(`(?<![\\w.-])${path.posix.basename(f).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`);
  for (const [file, src] of code) if (named.test(src)) reach(file);
  if (f.startsWith('edge/web/')) for (const [file, src] of code) if (src.includes('launchBrowser(')) reach(file);
}
while (queue.length) for (const by of importers.get(queue.pop()) ?? []) reach(by);

const files = [...touched].filter((f) => f.startsWith('test/') && f.endsWith('.test.ts') && existsSync(path.join(ROOT, f))).sort();
console.log(`# test:quick: ${changed.size} file(s) changed since ${base}; ${files.length} test file(s) touch them`);
for (const f of files) console.log(`#   ${f}`);
if (process.env.TEST_QUICK_LIST || !files.length) process.exit(0);
const run = spawnSync('bash', [path.join(ROOT, 'scripts/test.sh'), ...files], { cwd: ROOT, stdio: 'inherit' });
process.exit(run.status ?? 1);
