#!/usr/bin/env node
// `cortado-mcp`: Cortado's MCP tools over stdio, for clients that launch a local process
// (the same as `cortado mcp-stdio`). Reads SERVICE_TOKEN and CORTADO_URL from the environment.
import { register } from 'tsx/esm/api';

register();
const { runMcpStdio } = await import('../cli/mcp-stdio.ts');
const code = await runMcpStdio();
process.exit(code);
