// Loads a worker thread's module: its compiled JavaScript where that sits beside it (the tests'
// copy, .build/: scripts/build-tests.mjs), with no loader; otherwise the TypeScript through tsx,
// as bin/cortado.js does. `base` is the module's URL without its extension.
import { existsSync } from 'node:fs';

export async function loadBeside(base) {
  const compiled = new URL(`${base.href}.js`);
  if (existsSync(compiled)) return import(compiled.href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(`${base.href}.ts`);
}
