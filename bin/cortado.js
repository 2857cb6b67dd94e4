#!/usr/bin/env node
// The `cortado` command: TypeScript sources run through tsx's loader. Where the compiled
// JavaScript sits beside them (the tests' copy, .build/: scripts/build-tests.mjs), that runs
// instead, with no loader.
import { existsSync } from 'node:fs';

const compiled = new URL('../cli/main.js', import.meta.url);
let main;
if (existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
const code = await main(process.argv.slice(2));
process.exit(code);
