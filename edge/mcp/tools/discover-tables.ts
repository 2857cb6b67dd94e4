/**
 * discover_tables: table names matching part of a name, across every catalog in
 * plugins.auth.allowed_catalogs for a catalog-less (discovery) token, or within the token's own
 * catalog. Metadata only: never a row. Advertised only when discovery is on (edge/discovery.ts,
 * what /auth/config says as discovery_enabled), decided per connection when it opens.
 */
import Type from 'typebox';
import { SchemaDiscover } from '../../../protocol/subjects.js';
import { discoverTargets, scopeCatalog } from '../../discovery.js';
import type { McpTool } from './types.js';

const Input = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 200, description: 'part of a table name' }),
}, { additionalProperties: false });

export const discoverTables: McpTool<typeof Input> = {
  name: 'discover_tables',
  description: 'Find tables by part of their name across the allowed catalogs.',
  input: Input,
  enabled: (session) => session.discovery,
  async run(args, { bus, config, session, ctx }) {
    const found = await bus.request(SchemaDiscover, { query: args.query, ...discoverTargets(config, scopeCatalog(config, session.dbConfig)) }, ctx);
    const text = found.tables.length
      ? found.tables.map((t) => `${t.catalog}.${t.schema}.${t.name}${t.kind === 'view' ? ' (view)' : ''}`).join('\n') + (found.truncated ? '\n(more matches: narrow the query)' : '')
      : `No table name contains "${args.query}".`;
    return { structured: { tables: found.tables, truncated: found.truncated }, text };
  },
};
