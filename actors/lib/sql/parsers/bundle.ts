/**
 * A parser worker's TypeScript as one JavaScript file, so a replacement worker starts in about
 * a tenth of a second: through the tsx loader (registering it, then compiling each module) a
 * worker takes 0.3 to 1 s to start, and a storm of SQL that breaks a parser is a storm of
 * replacements (pool.ts).
 *
 * esbuild bundles the worker module and the project files it imports; packages stay outside
 * the bundle, imported by their absolute file URLs (the bundle lives in a private temporary
 * directory, from which a bare package name would not resolve), and `import.meta.url` is the
 * worker module's own, so `createRequire(import.meta.url)` finds the CommonJS parser builds as
 * it does in the source tree. The directory is made for this process alone (mkdtemp, 0700) and
 * removed at exit. When bundling fails, the pool starts its workers through tsx instead.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

let dir: string | undefined;

/** The worker module `source` (a .ts file) bundled into a file of its own; its URL. */
export async function bundleWorker(source: URL, name: string): Promise<URL> {
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: [fileURLToPath(source)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    define: { 'import.meta.url': JSON.stringify(source.href) },
    plugins: [
      {
        name: 'packages-by-path',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (args.path.startsWith('node:')) return { external: true };
            return { path: import.meta.resolve(args.path), external: true }; // every package is the project's
          });
        },
      },
    ],
  });
  const code = out.outputFiles[0]?.text;
  if (!code) throw new Error('esbuild produced no output');
  if (!dir) {
    dir = mkdtempSync(path.join(tmpdir(), 'cortado-parsers-'));
    const made = dir;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  const file = path.join(dir, `${name}.mjs`);
  writeFileSync(file, code, { mode: 0o600 });
  return pathToFileURL(file);
}
