// The guard's worker thread (isolated.ts): load TypeScript through tsx (as bin/cortado.js does), then the worker.
// Where the module's compiled JavaScript sits beside it (the tests' copy, .build/: scripts/build-tests.mjs),
// that runs instead, with no loader.
import { existsSync } from 'node:fs';

const compiled = new URL('./worker.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./worker.ts');
}
