#!/usr/bin/env node
// `cortado-mcp`: Cortado's MCP tools over stdio, for clients that launch a local process
// (the same as `cortado mcp-stdio`). Reads SERVICE_TOKEN and CORTADO_URL from the environment.
// TypeScript through tsx, or the compiled JavaScript where it sits beside it (bin/cortado.js).
import { existsSync } from 'node:fs';

const compiled = new URL('../cli/mcp-stdio.js', import.meta.url);
let runMcpStdio;
if (existsSync(compiled)) {
  ({ runMcpStdio } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ runMcpStdio } = await import('../cli/mcp-stdio.ts'));
}
const code = await runMcpStdio();
process.exit(code);
