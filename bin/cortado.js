#!/usr/bin/env node
// The `cortado` command: TypeScript sources run through tsx's loader.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main.ts');
const code = await main(process.argv.slice(2));
process.exit(code);
