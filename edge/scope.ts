/**
 * The database scope of an API token on the bus. A token minted with a db_config (by an
 * authenticated session of plugins.auth, or by an admin) runs in its own scope, `t:<token id>`:
 * the executor resolves it with the identity actor and queries on the token's own credentials,
 * catalog and schema, under the catalog lock; the catalog keeps its tables apart. A token with
 * an empty db_config has no scope: the server's own database.
 */
export function tokenScope(info: { id: string; db_config: Readonly<Record<string, unknown>> }): { scope?: string } {
  return Object.keys(info.db_config).length > 0 ? { scope: `t:${info.id}` } : {};
}
