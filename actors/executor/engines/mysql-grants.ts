/**
 * What a MySQL / MariaDB account may do beyond reading, from the lines of SHOW GRANTS
 * (actors/executor/privilege.ts decides what follows). An allow-list: USAGE (nothing), SELECT
 * and SHOW VIEW are reading, unless they reach the server's own schemas (`mysql`: accounts and
 * password hashes; `performance_schema` and `sys`: other sessions' statements); every other
 * privilege is a reason — the ones that change data, schema, routines, accounts or files as
 * writes, the rest (PROCESS, RELOAD, SHUTDOWN, REPLICATION …, SHOW DATABASES, PROXY, MySQL 8's
 * dynamic privileges, and any name this file does not know) as powers.
 *
 * Roles: MariaDB's SHOW GRANTS shows the grants of the account's current (default) role and of
 * the roles granted to it; MySQL 8 shows them with `USING` (the engine asks again with it). A role
 * granted to the account whose privileges the lines do not show is a reason of its own: the
 * account could enable it, and what it brings cannot be known.
 *
 * A line is never repeated in a reason: SHOW GRANTS may carry a password hash.
 */
import type { RolePrivileges, WriteAccess } from './engine.js';

/** Privileges that only read. */
const READING: ReadonlySet<string> = new Set(['SELECT', 'SHOW VIEW']);

/** Privileges that change data, schema, routines, accounts or server files (the rest are powers). */
const WRITING: ReadonlySet<string> = new Set([
  'ALL', 'ALL PRIVILEGES', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'DROP', 'ALTER', 'INDEX', 'REFERENCES', 'CREATE VIEW',
  'CREATE ROUTINE', 'ALTER ROUTINE', 'EXECUTE', 'TRIGGER', 'EVENT', 'CREATE TEMPORARY TABLES', 'LOCK TABLES', 'DELETE HISTORY',
  'FILE', 'SUPER', 'CREATE USER', 'CREATE ROLE', 'DROP ROLE', 'CREATE TABLESPACE', 'GRANT OPTION', 'SET USER', 'READ_ONLY ADMIN',
  'SYSTEM_VARIABLES_ADMIN', 'ROLE_ADMIN',
]);

/** Why a privilege matters, where its name does not say it. */
const WHY: Readonly<Record<string, string>> = {
  FILE: 'reads and writes files on the database server',
  SUPER: 'may change server settings, end other sessions and write past read_only',
  PROCESS: 'sees every session\'s statements',
  RELOAD: 'may flush logs, caches and the privilege tables',
  SHUTDOWN: 'may stop the server',
  'GRANT OPTION': 'may pass its privileges on',
  'CREATE USER': 'may create and change accounts',
  'SHOW DATABASES': 'lists every database of the server',
  PROXY: 'may act as another account',
  EXECUTE: 'may call routines, which may write with their definer\'s rights',
  'REPLICATION SLAVE': 'may read the binary log: every change on the server',
  'REPLICATION REPLICA': 'may read the binary log: every change on the server',
  'CONNECTION ADMIN': 'may end other sessions',
  'SET USER': 'may create objects that run as any account',
};

/** Schemas of the server itself: reading them is not reading data. */
const SYSTEM_SCHEMAS = ['mysql', 'performance_schema', 'sys'];

const QUOTED = '`(?:[^`]|``)*`';
const ACCOUNT = new RegExp(`${QUOTED}(?:@${QUOTED})?|'(?:[^']|'')*'(?:@'(?:[^']|'')*')?|[^\\s,\`']+`, 'g');

interface ReadLines {
  writes: string[];
  powers: string[];
  /** the roles granted to someone in these lines (as SHOW GRANTS quotes them) */
  granted: string[];
  /** whoever a privilege line grants to */
  grantees: Set<string>;
}

function readLines(grants: readonly string[]): ReadLines {
  const out: ReadLines = { writes: [], powers: [], granted: [], grantees: new Set() };
  grants.forEach((raw, index) => {
    const line = raw.trim();
    if (!/^GRANT\s/i.test(line)) return; // SET DEFAULT ROLE, REVOKE (partial revokes only take away)
    const on = /^GRANT\s+(.+?)\s+ON\s+(?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE(?:\s+BODY)?)\s+)?(\S+)\s+TO\s+(.*)$/is.exec(line);
    if (on) {
      const grantee = on[3]!.match(ACCOUNT)?.[0];
      if (grantee) out.grantees.add(grantee);
      const privileges = splitPrivileges(on[1]!);
      if (/\sWITH\s(?:.*\s)?GRANT\s+OPTION\b/i.test(` ${on[3]!}`)) privileges.push('GRANT OPTION');
      classify(privileges, on[2]!, out);
      return;
    }
    const roles = /^GRANT\s+(.+?)\s+TO\s+(.*)$/is.exec(line);
    if (roles) {
      const names = roles[1]!.match(ACCOUNT) ?? [];
      out.granted.push(...names);
      if (/\sWITH\s+ADMIN\s+OPTION\b/i.test(` ${roles[2]!}`)) out.writes.push(`ADMIN OPTION on role ${names.join(', ')} (may grant it to others)`);
      return;
    }
    out.powers.push(`a grant Cortado cannot read (line ${index + 1} of SHOW GRANTS)`);
  });
  return out;
}

function classify(privileges: string[], target: string, out: ReadLines): void {
  const db = databaseOf(target);
  const system = db === undefined || db === '*' || SYSTEM_SCHEMAS.some((s) => matchesPattern(db, s));
  const writes: string[] = [];
  const powers: string[] = [];
  for (const p of privileges) {
    if (p === 'USAGE') continue;
    if (READING.has(p)) {
      if (system) powers.push(p);
    } else if (WRITING.has(p)) {
      writes.push(p);
    } else {
      powers.push(p);
    }
  }
  const reason = (list: string[], reading: boolean): string => {
    const whys = list.map((p) => WHY[p]).filter((w): w is string => w !== undefined);
    if (reading && list.some((p) => READING.has(p))) {
      whys.push(db === '*' ? 'reads every database, the mysql schema\'s accounts and password hashes too' : 'reads the server\'s own schema: accounts, password hashes or other sessions\' statements');
    }
    return `${list.join(', ')} on ${target}${whys.length ? ` (${whys.join('; ')})` : ''}`;
  };
  if (writes.length) out.writes.push(reason(writes, false));
  if (powers.length) out.powers.push(reason(powers, true));
}

/** `SELECT (a, b), INSERT, ALL PRIVILEGES` → ['SELECT', 'INSERT', 'ALL PRIVILEGES'] (column lists dropped). */
function splitPrivileges(list: string): string[] {
  return list
    .replace(/\([^)]*\)/g, '')
    .split(',')
    .map((p) => p.trim().replace(/\s+/g, ' ').toUpperCase())
    .filter(Boolean);
}

/** The database part of a grant's target (`*` for `*.*` and `*`), undefined when it is not `db.table` (PROXY's account). */
function databaseOf(target: string): string | undefined {
  if (target === '*' || target === '*.*') return '*';
  const parts: string[] = [];
  const re = /`((?:[^`]|``)*)`|([^.`]+)|(\.)/g;
  for (let m = re.exec(target); m; m = re.exec(target)) {
    if (m[1] !== undefined) parts.push(m[1].replace(/``/g, '`'));
    else if (m[2] !== undefined) parts.push(m[2]);
  }
  return parts.length === 2 ? parts[0] : undefined;
}

/** Whether a grant's database pattern (`%` and `_` wildcards, `\` escapes) covers `name`. */
function matchesPattern(pattern: string, name: string): boolean {
  const re = pattern.replace(/\\(.)|([%_])|([^\\%_]+)/g, (_all, escaped: string | undefined, wild: string | undefined, plain: string | undefined) => {
    if (escaped !== undefined) return escaped.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (wild !== undefined) return wild === '%' ? '.*' : '.';
    return (plain ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${re}$`, 'i').test(name);
}

/** The roles granted in these lines whose own grants the lines do not show. */
export function rolesNotShown(grants: readonly string[]): string[] {
  const read = readLines(grants);
  return [...new Set(read.granted)].filter((r) => !read.grantees.has(r));
}

/**
 * The account's privileges beyond reading. `expanded`: roles whose privileges are merged into
 * the lines already (MySQL 8's SHOW GRANTS … USING), so they are known.
 */
export function privilegesFromGrants(grants: readonly string[], role: string, expanded: readonly string[] = []): RolePrivileges {
  const read = readLines(grants);
  const unknown = [...new Set(read.granted)].filter((r) => !read.grantees.has(r) && !expanded.includes(r));
  for (const r of unknown) {
    read.powers.push(`may enable role ${r}, whose privileges SHOW GRANTS does not show (make it the account's default role, or revoke it)`);
  }
  return { role, writes: read.writes, powers: read.powers };
}

// ---- write access (canWrite) ---------------------------------------------------------------

/** Privileges that change data, schema or server files. */
const WRITING_ON_DATABASE = [
  'ALL PRIVILEGES', 'ALL', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'DROP', 'ALTER', 'INDEX', 'CREATE VIEW', 'CREATE ROUTINE',
  'ALTER ROUTINE', 'TRIGGER', 'EVENT', 'FILE', 'SUPER', 'DELETE HISTORY',
];

/** `GRANT SELECT, INSERT ON `shop`.* TO `u`@`%`` lines → whether and why the account can write. */
export function writeAccessFromGrants(grants: string[], database: string): WriteAccess {
  const reasons: string[] = [];
  for (const line of grants) {
    const m = /^GRANT\s+(.+?)\s+ON\s+(?:(?:TABLE|FUNCTION|PROCEDURE|PACKAGE(?:\s+BODY)?)\s+)?(\S+)\s+TO\s/i.exec(line);
    if (!m) continue;
    const privileges = splitPrivileges(m[1]!);
    const target = m[2]!;
    if (!appliesTo(target, database)) continue;
    const writing = privileges.filter((p) => WRITING_ON_DATABASE.includes(p));
    if (writing.length) reasons.push(`${writing.join(', ')} on ${target}`);
  }
  return { writable: reasons.length > 0, reasons };
}

/** Whether a grant's `db.table` target covers the configured database (empty: any database). */
function appliesTo(target: string, database: string): boolean {
  const dot = splitTarget(target);
  if (!dot) return false;
  const db = dot.db;
  if (db === '*') return true;
  if (!database) return !['mysql', 'information_schema', 'performance_schema', 'sys'].includes(db.toLowerCase());
  // database names in grants may be LIKE patterns (`shop\_%`): % and _ wildcards, \ escapes
  const pattern = db.replace(/\\(.)|([%_])|([^\\%_]+)/g, (_all, escaped: string | undefined, wild: string | undefined, plain: string | undefined) => {
    if (escaped !== undefined) return escaped.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (wild !== undefined) return wild === '%' ? '.*' : '.';
    return (plain ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return new RegExp(`^${pattern}$`, 'i').test(database) || db === database;
}

/** `` `shop`.`orders` `` / `*.*` / `shop.*` → { db, table }. */
function splitTarget(target: string): { db: string; table: string } | undefined {
  const parts: string[] = [];
  const re = /`((?:[^`]|``)*)`|([^.`]+)|\./g;
  for (let m = re.exec(target); m; m = re.exec(target)) {
    if (m[1] !== undefined) parts.push(m[1].replace(/``/g, '`'));
    else if (m[2] !== undefined) parts.push(m[2]);
  }
  if (parts.length === 1) return { db: '*', table: parts[0]! }; // `GRANT ... ON *` means the default database; treat as any
  if (parts.length !== 2) return undefined;
  return { db: parts[0]!, table: parts[1]! };
}
