/**
 * What makes the embedded database's one shared session the reader's: UTC, read-only by
 * default, as the role that may only SELECT. Set once at start (server.ts) and again by the
 * executor after each question's reset (engines/index.ts `embeddedReset`). A module of its own,
 * so the executor reads it without loading PGlite.
 */
export function readerSessionSql(role: string): string {
  const quoted = /^[a-z_][a-z0-9_]*$/.test(role) ? role : `"${role.replace(/"/g, '""')}"`;
  return `SET TimeZone = 'UTC'; SET default_transaction_read_only = on; SET ROLE ${quoted}`;
}
