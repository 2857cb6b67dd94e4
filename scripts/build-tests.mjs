// The tests as plain JavaScript (npm test runs them from here): a copy of the project's files
// under .build/, each .ts beside its compiled .js. Compiled JavaScript costs a third to a half of
// the CPU the same file costs through tsx's loader hooks (issue 26); source maps (run with
// --enable-source-maps) make a failure point at the .ts line.
//
// Everything else is copied as it is (not linked: readdir sees a link as no file), so what a
// test reads beside itself (fixtures, edge/web, docs, SQL, worker entries, the .ts sources the
// import-rule tests read) sits where it does in the source tree, and config/load.ts's ROOT is
// .build/. What still runs through tsx (bin/cortado.js and the processes it starts, workers'
// .mjs entries) runs the copied .ts as before.
//
// Incremental: each output carries its source's modification time, and a file is copied or
// compiled again only when that time differs (newer or older: a checkout, a restore); files whose
// source is gone are removed, so a deleted module cannot linger for a test that walks a folder.
//   node scripts/build-tests.mjs   prints the build directory
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, '.build');
// what the tests can reach: the folders tsconfig.json includes, the commands, the docs and files at the top
const DIRS = ['protocol', 'runtime', 'config', 'store', 'actors', 'edge', 'cli', 'test', 'bench', 'scripts', 'bin', 'docs', 'deploy'];
const TOP = ['package.json', 'tsconfig.json', 'README.md', 'compose.yaml', 'nats.conf', 'Dockerfile', '.dockerignore'];

/** every regular file under `dir`, relative to ROOT */
function walk(dir, into = []) {
  let entries;
  try { entries = readdirSync(path.join(ROOT, dir), { withFileTypes: true }); } catch { return into; }
  for (const e of entries) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) { if (e.name !== 'node_modules') walk(rel, into); } else if (e.isFile()) into.push(rel);
  }
  return into;
}

const mtime = (file) => { try { return Math.floor(statSync(file).mtimeMs); } catch { return -1; } };
const stamp = (file, ms) => utimesSync(file, new Date(), new Date(ms));

const sources = [...DIRS.flatMap((d) => walk(d)), ...TOP.filter((f) => mtime(path.join(ROOT, f)) >= 0)];
const wanted = new Set();
const compile = [];
for (const rel of sources) {
  const src = path.join(ROOT, rel);
  const at = mtime(src);
  const copy = path.join(OUT, rel);
  wanted.add(copy);
  if (mtime(copy) !== at) {
    mkdirSync(path.dirname(copy), { recursive: true });
    copyFileSync(src, copy);
    stamp(copy, at);
  }
  if (rel.endsWith('.ts') && !rel.endsWith('.d.ts')) {
    const js = copy.slice(0, -3) + '.js';
    wanted.add(js).add(js + '.map');
    if (mtime(js) !== at || mtime(js + '.map') !== at) compile.push([rel, js, at]);
  }
}

if (compile.length) {
  // the same transform tsx applies (esbuild, with tsconfig.json's settings), once, ahead of the run
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: compile.map(([rel]) => rel),
    outdir: OUT,
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  for (const [, js, at] of compile) { stamp(js, at); stamp(js + '.map', at); }
}

// packages where the source tree has them (a test may read node_modules/<package>/ beside the project)
try { symlinkSync(path.join(ROOT, 'node_modules'), path.join(OUT, 'node_modules')); } catch (err) { if (err.code !== 'EEXIST') throw err; }

// what no source stands for any more
(function prune(dir) {
  let entries;
  try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (dir === OUT && !DIRS.includes(e.name)) continue; // what tests made at the top (data/): theirs
      prune(p);
    } else if (!wanted.has(p) && !(dir === OUT && !TOP.includes(e.name))) rmSync(p, { force: true });
  }
})(OUT);

process.stdout.write(`${OUT}\n`);
