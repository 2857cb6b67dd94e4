/** Every MCP tool, in the order tools/list shows them. One file per tool. */
import { askDatabase } from './ask-database.js';
import { discoverTables } from './discover-tables.js';
import { getSchema } from './get-schema.js';
import { listTables } from './list-tables.js';
import type { McpTool } from './types.js';

export const TOOLS: readonly McpTool[] = [askDatabase, listTables, getSchema, discoverTables] as unknown as readonly McpTool[];
