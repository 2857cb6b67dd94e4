/**
 * discover_tables: table names matching part of a name, across every catalog in
 * plugins.auth.allowed_catalogs. Metadata only: never a row. Advertised only when
 * plugins.auth.enable_discovery_tokens is on (decided per connection, when it opens).
 */
import Type from 'typebox';
import { SchemaDiscover } from '../../../protocol/subjects.js';
import type { McpTool } from './types.js';

const Input = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 200, description: 'part of a table name' }),
}, { additionalProperties: false });

export const discoverTables: McpTool<typeof Input> = {
  name: 'discover_tables',
  description: 'Find tables by part of their name across the allowed catalogs.',
  input: Input,
  enabled: (session) => session.discovery,
  async run(args, { bus, config, ctx }) {
    const catalogs = config.plugins.auth.allowed_catalogs.map((c) => ({ name: c.name, allowed_schemas: [...c.allowed_schemas] }));
    const found = await bus.request(SchemaDiscover, { query: args.query, catalogs }, ctx);
    const text = found.tables.length
      ? found.tables.map((t) => `${t.catalog}.${t.schema}.${t.name}${t.kind === 'view' ? ' (view)' : ''}`).join('\n') + (found.truncated ? '\n(more matches: narrow the query)' : '')
      : `No table name contains "${args.query}".`;
    return { structured: { tables: found.tables, truncated: found.truncated }, text };
  },
};
