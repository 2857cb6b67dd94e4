/**
 * Directory (LDAP) login through `ldapts`: direct bind with `user_dn_template`, or
 * search-and-bind with a service account; an optional group requirement checked through
 * `member`, `memberOf` or `memberUid`. Which group a login needs is the caller's to say, for
 * each login: the assistant gate asks for `ldap.required_group_dn`, the admin panel for
 * `admin.ldap_group_dn` (one group serving both made every gate user an admin). Shared library code: the identity actor logs people in
 * with it, the settings actor tests a connection with it (the only importers of `ldapts`).
 *
 * Expected failures never throw: they come back as `{ ok: false, reason }`, and `unreachable`
 * (connect error, timeout, TLS failure, server busy/unavailable) lets the caller fall back to the
 * local admin login as SPEC.md says. Passwords are never logged, returned or put in a message.
 *
 * Two holes this file closes on purpose:
 * - an empty password is refused before anything is sent: a simple bind with a DN and an empty
 *   password is an *unauthenticated* bind (RFC 4513 §5.1.2) that some servers answer with
 *   success, which would log anyone in;
 * - the username is escaped wherever it is placed: RFC 4515 in the search filter (no `*`,
 *   `(`, `)`, `\`, NUL reach the filter syntax), RFC 4514 in the DN template.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import {
  Client,
  FilterParser,
  InvalidCredentialsError,
  NoSuchObjectError,
  ResultCodeError,
  SASL_MECHANISMS,
  SizeLimitExceededError,
  type Entry,
  type Filter,
} from 'ldapts';
import type { Config } from '../../../config/schema.js';
import { loginKey, loginNameProblem } from '../../../protocol/schemas/text.js';

export type LdapSettings = Config['ldap'];

export type LdapFailureReason = 'invalid_credentials' | 'not_in_group' | 'unreachable' | 'invalid_username' | 'misconfigured';

export type LdapResult =
  | { ok: true; dn: string; username: string; displayName?: string; mail?: string }
  | { ok: false; reason: LdapFailureReason; message: string };

export interface LdapConnectionTest {
  ok: boolean;
  message: string;
  latency_ms: number;
}

const MAX_USERNAME_CHARS = 256;
/** attributes read from the user's entry */
const USER_ATTRS = ['uid', 'cn', 'displayName', 'mail', 'memberOf'];
/** result codes that mean "the server is there but cannot serve now": treated like unreachable */
const BUSY_CODES = new Set([51 /* busy */, 52 /* unavailable */]);
/** result codes of a user bind that point at the configuration, not at the user's password */
const CONFIG_BIND_CODES = new Set([7 /* authMethodNotSupported */, 8 /* strongerAuthRequired */, 13 /* confidentialityRequired */]);

// ---------------------------------------------------------------------------------------------
// Escaping and DN comparison

/** RFC 4515 §3: a value placed inside a search filter. */
export function escapeFilterValue(v: string): string {
  return v.replace(/[*()\\\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** RFC 4514 §2.4: a value placed inside a DN (an attribute value of one RDN). */
export function escapeDnValue(v: string): string {
  let out = '';
  const chars = [...v];
  chars.forEach((c, i) => {
    const code = c.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) out += `\\${code.toString(16).padStart(2, '0')}`;
    else if ('"+,;<>\\='.includes(c)) out += `\\${c}`;
    else if ((i === 0 && (c === ' ' || c === '#')) || (i === chars.length - 1 && c === ' ')) out += `\\${c}`;
    else out += c;
  });
  return out;
}

/**
 * A DN in a canonical form for comparison: attribute types and values lower-cased, escapes
 * resolved (hex pairs as UTF-8 bytes), insignificant spaces removed, multi-valued RDNs sorted.
 * Case-insensitive on values, which is what the usual naming attributes (cn, uid, ou, dc) use.
 */
export function normalizeDn(dn: string): string {
  const rdns: string[] = [];
  let avas: string[] = [];
  let type = '';
  let bytes: number[] = [];
  let keep = 0; // bytes up to here end with an escape: trailing spaces before it are significant
  let inValue = false;
  const finishAva = (): void => {
    let end = bytes.length;
    while (end > keep && bytes[end - 1] === 0x20) end--;
    const raw = Buffer.from(bytes.slice(0, end)).toString('utf8');
    const value = raw.startsWith('#') ? raw.toLowerCase() : raw.toLowerCase().replace(/ {2,}/g, ' ');
    avas.push(`${type.trim().toLowerCase()}=${escapeDnValue(value)}`);
    type = '';
    bytes = [];
    keep = 0;
    inValue = false;
  };
  const finishRdn = (): void => {
    finishAva();
    rdns.push(avas.sort().join('+'));
    avas = [];
  };
  for (let i = 0; i < dn.length; i++) {
    const c = dn[i] ?? '';
    if (!inValue) {
      if (c === '=') inValue = true;
      else type += c;
      continue;
    }
    if (c === '\\') {
      const hex = dn.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        bytes.push(Number.parseInt(hex, 16));
        i += 2;
      } else if (i + 1 < dn.length) {
        bytes.push(...Buffer.from(dn[i + 1] ?? '', 'utf8'));
        i += 1;
      }
      keep = bytes.length;
    } else if (c === ',' || c === ';') {
      finishRdn();
    } else if (c === '+') {
      finishAva();
    } else if (c === ' ' && bytes.length === 0) {
      // leading space of a value: insignificant unless escaped
    } else {
      bytes.push(...Buffer.from(c, 'utf8'));
    }
  }
  if (type.trim() || inValue) finishRdn();
  return rdns.join(',');
}

// ---------------------------------------------------------------------------------------------
// Settings

interface Target {
  url: string;
  secure: boolean;
  host: string;
}

/** The server URL to use: the scheme the setting names, ldaps when use_ssl asks for TLS. */
function target(settings: LdapSettings): Target | string {
  let raw = (settings.server ?? '').trim();
  if (!raw) return 'ldap.server is not set';
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) raw = `${settings.use_ssl ? 'ldaps' : 'ldap'}://${raw}`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'ldap.server is not a valid ldap:// or ldaps:// URL';
  }
  let scheme = u.protocol.replace(/:$/, '').toLowerCase();
  if (scheme !== 'ldap' && scheme !== 'ldaps') return 'ldap.server must be an ldap:// or ldaps:// URL';
  // use_ssl means TLS from the first byte (like ldaps://): never send a password in clear
  // because the URL said ldap:// while the setting asked for TLS.
  if (settings.use_ssl) scheme = 'ldaps';
  if (!u.hostname) return 'ldap.server has no host';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return { url: `${scheme}://${u.host}`, secure: scheme === 'ldaps', host };
}

function timeoutMs(settings: LdapSettings): number {
  const s = Number(settings.connect_timeout);
  return Math.max(1, Number.isFinite(s) && s > 0 ? s : 5) * 1000;
}

function newClient(t: Target, ms: number): Client {
  return new Client({
    url: t.url,
    connectTimeout: ms,
    timeout: ms,
    ...(t.secure ? { tlsOptions: { minVersion: 'TLSv1.2' as const, ...(net.isIP(t.host) ? {} : { servername: t.host }) } } : {}),
  });
}

async function close(client: Client): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.unbind().catch(() => undefined),
    new Promise<void>((r) => { timer = setTimeout(r, 1000); timer.unref(); }),
  ]);
  if (timer) clearTimeout(timer);
}

function checkUsername(username: unknown): string | null {
  if (typeof username !== 'string' || username.trim() === '') return 'the username is empty';
  if ([...username].length > MAX_USERNAME_CHARS) return `the username is longer than ${MAX_USERNAME_CHARS} characters`;
  for (const c of username) {
    const code = c.codePointAt(0) ?? 0;
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return 'the username contains control characters';
  }
  // one spelling per user: the directory folds the others onto it (fullwidth, invisible characters, spaces)
  return loginNameProblem(username) ?? null;
}

// ---------------------------------------------------------------------------------------------
// Errors

class Failure extends Error {
  constructor(readonly reason: LdapFailureReason, message: string) {
    super(message);
  }
}

function describe(err: unknown): string {
  if (err instanceof ResultCodeError) return `${err.message || err.name} (LDAP result ${err.code})`;
  if (err instanceof Error) return err.message.split('\n')[0] ?? err.name;
  return String(err);
}

function isConnectionError(err: unknown): boolean {
  return !(err instanceof ResultCodeError) || BUSY_CODES.has(err.code);
}

/** Runs one step; a connection-level error becomes `unreachable`, a result code goes to `onCode`. */
async function step<T>(t: Target, what: string, fn: () => Promise<T>, onCode: (err: ResultCodeError) => Failure): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Failure) throw err;
    if (isConnectionError(err)) throw new Failure('unreachable', `directory ${t.url} unreachable during ${what}: ${describe(err)}`);
    throw onCode(err as ResultCodeError);
  }
}

// ---------------------------------------------------------------------------------------------
// Entries

function values(entry: Entry | undefined, attr: string): string[] {
  if (!entry) return [];
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attr.toLowerCase());
  if (!key || key === 'dn') return [];
  const v = entry[key];
  const list = Array.isArray(v) ? v : v === undefined ? [] : [v];
  return list.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
}

async function readEntry(client: Client, t: Target, dn: string, attributes: string[]): Promise<Entry | undefined> {
  return step(t, `reading ${dn}`, async () => {
    try {
      const r = await client.search(dn, { scope: 'base', filter: '(objectClass=*)', attributes });
      return r.searchEntries[0];
    } catch (err) {
      if (err instanceof NoSuchObjectError) return undefined;
      throw err;
    }
  }, (err) => new Failure('misconfigured', `cannot read ${dn}: ${describe(err)}`));
}

/**
 * Whether the user belongs to the group `groupDn`. Runs on a connection allowed to read the
 * group (the service account in search mode, the user in direct-bind mode).
 */
async function inGroup(
  client: Client, t: Target, settings: LdapSettings, groupDn: string, userDn: string, userEntry: Entry | undefined, username: string,
): Promise<boolean> {
  const mode = settings.group_member_attr;
  if (mode === 'memberOf') {
    if (!userEntry) throw new Failure('misconfigured', `cannot read the user's entry to check memberOf`);
    const want = normalizeDn(groupDn);
    return values(userEntry, 'memberOf').some((g) => normalizeDn(g) === want);
  }
  const attr = mode === 'memberUid' ? 'memberUid' : 'member';
  const group = await readEntry(client, t, groupDn, [attr]);
  if (!group) throw new Failure('misconfigured', `group ${groupDn} not found (or not readable)`);
  const members = values(group, attr);
  if (mode === 'memberUid') {
    // memberUid holds uid values (caseExactIA5Match): compare with the entry's own uid when known
    const uids = values(userEntry, 'uid');
    const candidates = uids.length ? uids : [username];
    return members.some((m) => candidates.includes(m));
  }
  const want = normalizeDn(userDn);
  return members.some((m) => normalizeDn(m) === want);
}

function success(dn: string, username: string, entry: Entry | undefined): LdapResult {
  // the entry's own spelling of the name (the session's user): the directory matched the typed
  // name by its rules, which loginKey folds the same way
  const uid = values(entry, 'uid').find((u) => loginKey(u) === loginKey(username));
  const displayName = values(entry, 'displayName')[0] ?? values(entry, 'cn')[0];
  const mail = values(entry, 'mail')[0];
  return {
    ok: true,
    dn,
    username: uid ?? username,
    ...(displayName ? { displayName } : {}),
    ...(mail ? { mail } : {}),
  };
}

/** The user's own bind: refused credentials are the user's problem, a few codes are the config's. */
function userBindFailure(err: ResultCodeError): Failure {
  if (err instanceof InvalidCredentialsError) return new Failure('invalid_credentials', 'the directory refused the username or password');
  if (CONFIG_BIND_CODES.has(err.code)) return new Failure('misconfigured', `the directory refused a simple bind: ${describe(err)} (TLS required?)`);
  return new Failure('invalid_credentials', `the directory refused the login: ${describe(err)}`);
}

// ---------------------------------------------------------------------------------------------
// Login

/** this process's name of no entry: the DN an unknown user's password is bound to (and refused) */
const ABSENT_RDN = `cn=cortado-no-such-user-${randomBytes(8).toString('hex')}`;

/** A DN under base_dn that no entry has: binding to it costs what a user's bind costs, and fails. */
function absentDn(baseDn: string): string {
  return baseDn ? `${ABSENT_RDN},${baseDn}` : ABSENT_RDN;
}

async function directBind(client: Client, t: Target, settings: LdapSettings, group: string, username: string, password: string): Promise<LdapResult> {
  const dn = settings.user_dn_template.replaceAll('{username}', escapeDnValue(username));
  if ((SASL_MECHANISMS as readonly string[]).includes(dn)) throw new Failure('invalid_username', 'the username is not allowed');
  await step(t, 'user bind', () => client.bind(dn, password), userBindFailure);
  const entry = await readEntry(client, t, dn, USER_ATTRS).catch((err: unknown) => {
    if (err instanceof Failure && err.reason === 'unreachable') throw err;
    return undefined; // not readable by the user: fine unless memberOf needs it
  });
  const userDn = entry?.dn ?? dn;
  if (group && !(await inGroup(client, t, settings, group, userDn, entry, username))) {
    return { ok: false, reason: 'not_in_group', message: `${username} is not a member of ${group}` };
  }
  return success(userDn, username, entry);
}

async function searchAndBind(
  client: Client, t: Target, settings: LdapSettings, group: string, filter: Filter, username: string, password: string,
): Promise<LdapResult> {
  if (settings.bind_dn.trim()) {
    await step(t, 'service bind', () => client.bind(settings.bind_dn.trim(), settings.bind_password), (err) =>
      new Failure('misconfigured', err instanceof InvalidCredentialsError
        ? 'the directory refused the service account (ldap.bind_dn / ldap.bind_password)'
        : `service account bind failed: ${describe(err)}`));
  }
  const baseDn = settings.base_dn.trim();
  const found = await step(t, 'user search', async () => {
    try {
      return (await client.search(baseDn, { scope: 'sub', filter, sizeLimit: 2, attributes: USER_ATTRS })).searchEntries;
    } catch (err) {
      if (err instanceof SizeLimitExceededError) return null;
      throw err;
    }
  }, (err) => new Failure('misconfigured', err instanceof NoSuchObjectError
    ? `ldap.base_dn ${baseDn} not found (or not readable)`
    : `user search failed: ${describe(err)}`));
  if (found === null || found.length > 1) {
    throw new Failure('misconfigured', 'ldap.user_search_filter matches more than one entry for this username');
  }
  const entry = found[0];
  // A name the directory does not know does the work of one it knows — the group read and a bind
  // of the password, to a DN that cannot exist — so the answer takes as long: the time of a wrong
  // password does not tell which names are users (the identity actor adds a floor on top).
  const dn = entry?.dn ?? absentDn(baseDn);
  // Decide the group question with the service account's rights, reveal it only after the
  // password has been verified.
  const allowed = group ? await inGroup(client, t, settings, group, dn, entry ?? { dn }, username) : true;
  await step(t, 'user bind', () => client.bind(dn, password), userBindFailure);
  if (!entry) throw new Failure('invalid_credentials', 'no directory entry matches the username');
  if (!allowed) return { ok: false, reason: 'not_in_group', message: `${username} is not a member of ${group}` };
  return success(entry.dn, username, entry);
}

/** Everything checkable before contacting the server; returns a failure message or null. */
function settingsProblem(settings: LdapSettings): string | null {
  const template = settings.user_dn_template.trim();
  if (template) {
    if (!template.includes('{username}')) return 'ldap.user_dn_template must contain {username}';
  } else {
    if (!settings.base_dn.trim()) return 'ldap.base_dn is required for search-and-bind (or set ldap.user_dn_template)';
    if (!settings.user_search_filter.includes('{username}')) return 'ldap.user_search_filter must contain {username}';
    if (settings.bind_dn.trim() && !settings.bind_password) {
      return 'ldap.bind_password is empty: a bind with an empty password is unauthenticated';
    }
  }
  if (!['member', 'memberOf', 'memberUid'].includes(settings.group_member_attr)) {
    return 'ldap.group_member_attr must be member, memberOf or memberUid';
  }
  return null;
}

/**
 * One directory login. `group`: the DN of the group the user must belong to for THIS login
 * ('' = any user the directory knows), e.g. `ldap.required_group_dn` for the assistant gate,
 * `admin.ldap_group_dn` for the admin panel.
 */
export async function ldapLogin(settings: LdapSettings, username: string, password: string, group: string): Promise<LdapResult> {
  const fail = (reason: LdapFailureReason, message: string): LdapResult => ({ ok: false, reason, message });
  if (!settings?.enabled) return fail('misconfigured', 'LDAP login is disabled (ldap.enabled)');
  const badName = checkUsername(username);
  if (badName) return fail('invalid_username', badName);
  // Never send an empty password: a DN with an empty password is an unauthenticated bind.
  if (typeof password !== 'string' || password.length === 0) return fail('invalid_credentials', 'empty password refused');
  const problem = settingsProblem(settings);
  if (problem) return fail('misconfigured', problem);
  const t = target(settings);
  if (typeof t === 'string') return fail('misconfigured', t);

  const direct = settings.user_dn_template.trim() !== '';
  let filter: Filter | undefined;
  if (!direct) {
    try {
      filter = FilterParser.parseString(settings.user_search_filter.replaceAll('{username}', escapeFilterValue(username)));
    } catch (err) {
      return fail('misconfigured', `ldap.user_search_filter is not a valid filter: ${describe(err)}`);
    }
  }

  let client: Client;
  try {
    client = newClient(t, timeoutMs(settings));
  } catch (err) {
    return fail('misconfigured', describe(err));
  }
  try {
    const groupDn = group.trim();
    return filter
      ? await searchAndBind(client, t, settings, groupDn, filter, username, password)
      : await directBind(client, t, settings, groupDn, username, password);
  } catch (err) {
    if (err instanceof Failure) return fail(err.reason, err.message);
    if (isConnectionError(err)) return fail('unreachable', `directory ${t.url} unreachable: ${describe(err)}`);
    return fail('misconfigured', `directory error: ${describe(err)}`);
  } finally {
    await close(client);
  }
}

/**
 * Connects, and binds as the service account when one is configured (then checks that base_dn
 * exists); without one, reads the root DSE anonymously. Never throws.
 */
export async function testLdapConnection(settings: LdapSettings): Promise<LdapConnectionTest> {
  const started = performance.now();
  const done = (ok: boolean, message: string): LdapConnectionTest => ({
    ok, message, latency_ms: Math.round(performance.now() - started),
  });
  const t = settings ? target(settings) : 'no ldap settings';
  if (typeof t === 'string') return done(false, t);
  const bindDn = settings.bind_dn.trim();
  if (bindDn && !settings.bind_password) return done(false, 'ldap.bind_password is empty: a bind with an empty password is unauthenticated');
  let client: Client;
  try {
    client = newClient(t, timeoutMs(settings));
  } catch (err) {
    return done(false, describe(err));
  }
  try {
    if (bindDn) {
      await step(t, 'service bind', () => client.bind(bindDn, settings.bind_password), (err) =>
        new Failure('misconfigured', err instanceof InvalidCredentialsError
          ? 'the directory refused the service account (ldap.bind_dn / ldap.bind_password)'
          : `service account bind failed: ${describe(err)}`));
      const baseDn = settings.base_dn.trim();
      if (baseDn) {
        const base = await readEntry(client, t, baseDn, ['1.1']);
        if (!base) return done(false, `connected and bound as ${bindDn}, but ldap.base_dn ${baseDn} was not found`);
      }
      return done(true, `connected to ${t.url} and bound as ${bindDn}`);
    }
    // No service account: any answer from the server (even a refusal) proves it is there.
    try {
      await client.search('', { scope: 'base', attributes: ['namingContexts'] });
    } catch (err) {
      if (isConnectionError(err)) return done(false, `directory ${t.url} unreachable: ${describe(err)}`);
    }
    return done(true, `connected to ${t.url} (anonymous)`);
  } catch (err) {
    if (err instanceof Failure) return done(false, err.message);
    return done(false, `directory ${t.url}: ${describe(err)}`);
  } finally {
    await close(client);
  }
}
