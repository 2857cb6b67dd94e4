/**
 * A private OpenLDAP slapd per test file: its own temp dir and cn=config, a free loopback port,
 * run in the foreground (so the process we spawned is the server, and stop() kills that PID).
 *
 * The directory under dc=cortado,dc=test:
 *   ou=people    alice (alice-pw; in cn=analysts via member, in cn=posix-analysts via memberUid),
 *                bob (bob-pw; in no group), o'neil (oneil-pw), star*man (star-pw),
 *                "doe, jane" (doe-pw; a comma in the RDN value)
 *   ou=services  cn=svc (svc-pw), the search-and-bind service account
 *   ou=groups    cn=analysts (groupOfNames), cn=posix-analysts (posixGroup): the assistant gate's;
 *                cn=admins (groupOfNames, member o'neil), cn=posix-admins (posixGroup, memberUid
 *                o'neil): a group of administrators that is not the analysts'
 * The memberof overlay is on, so alice carries memberOf=cn=analysts,ou=groups,... (entries are
 * added over LDAP after start, because slapadd would bypass the overlay).
 *
 * The server allows unauthenticated binds (a DN with an empty password succeeds as anonymous,
 * `olcAllows: bind_anon_dn`), the way a lax production directory might, so tests can show that
 * the login code itself refuses empty passwords. slapd runs with `-d 256` (stats): every
 * operation is logged to stderr, which `binds()` reads to count BIND operations.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'ldapts';
import { endWithProcess } from './leftovers.js';

export const BASE_DN = 'dc=cortado,dc=test';
export const PEOPLE_DN = `ou=people,${BASE_DN}`;
export const GROUPS_DN = `ou=groups,${BASE_DN}`;
export const SVC_DN = `cn=svc,ou=services,${BASE_DN}`;
export const SVC_PASSWORD = 'svc-pw';
export const ANALYSTS_DN = `cn=analysts,${GROUPS_DN}`;
export const POSIX_ANALYSTS_DN = `cn=posix-analysts,${GROUPS_DN}`;
export const ADMINS_DN = `cn=admins,${GROUPS_DN}`;
export const POSIX_ADMINS_DN = `cn=posix-admins,${GROUPS_DN}`;

/** The test users: uid, the RDN value as written in the DN (escaped), password. */
export const USERS = {
  alice: { uid: 'alice', dn: `uid=alice,${PEOPLE_DN}`, password: 'alice-pw', cn: 'Alice Analyst', mail: 'alice@cortado.test' },
  bob: { uid: 'bob', dn: `uid=bob,${PEOPLE_DN}`, password: 'bob-pw', cn: 'Bob Builder', mail: 'bob@cortado.test' },
  oneil: { uid: "o'neil", dn: `uid=o'neil,${PEOPLE_DN}`, password: 'oneil-pw', cn: "Pat O'Neil", mail: 'oneil@cortado.test' },
  starman: { uid: 'star*man', dn: `uid=star*man,${PEOPLE_DN}`, password: 'star-pw', cn: 'Star Man', mail: 'star@cortado.test' },
  doe: { uid: 'doe, jane', dn: `uid=doe\\, jane,${PEOPLE_DN}`, password: 'doe-pw', cn: 'Jane Doe', mail: 'doe@cortado.test' },
} as const;

export interface Slapd {
  url: string;
  port: number;
  dir: string;
  baseDn: string;
  adminDn: string;
  adminPassword: string;
  proc: ChildProcess;
  /** the stats log so far (stderr of slapd -d 256) */
  log(): string;
  /** how many BIND operations the server has received so far */
  binds(): number;
  stop(): Promise<void>;
}

function findBinary(name: string): string {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin']) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  throw new Error(`${name} not found: install slapd (apt-get install slapd ldap-utils; .ci/run does it)`);
}

function modulePath(): string {
  for (const d of ['/usr/lib/ldap', '/usr/lib64/openldap', '/usr/lib/openldap', '/usr/libexec/openldap']) {
    if (existsSync(path.join(d, 'memberof.la')) || existsSync(path.join(d, 'memberof.so'))) return d;
  }
  throw new Error('OpenLDAP modules (back_mdb, memberof) not found');
}

function schemaDir(): string {
  for (const d of ['/etc/ldap/schema', '/etc/openldap/schema']) if (existsSync(path.join(d, 'core.ldif'))) return d;
  throw new Error('OpenLDAP schema LDIFs not found');
}

/** {SSHA} the way slappasswd makes it: base64(sha1(password + salt) + salt). */
function ssha(password: string): string {
  const salt = randomBytes(8);
  const digest = createHash('sha1').update(password).update(salt).digest();
  return `{SSHA}${Buffer.concat([digest, salt]).toString('base64')}`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function configLdif(dir: string, adminPassword: string): string {
  const schema = schemaDir();
  return `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${dir}/slapd.pid
olcAllows: bind_anon_dn

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: ${modulePath()}
olcModuleLoad: back_mdb
olcModuleLoad: memberof

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file://${schema}/core.ldif
include: file://${schema}/cosine.ldif
include: file://${schema}/nis.ldif
include: file://${schema}/inetorgperson.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcAccess: {0}to dn.exact="" by * read
olcAccess: {1}to dn.base="cn=Subschema" by * read

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcSuffix: ${BASE_DN}
olcDbDirectory: ${dir}/db
olcDbMaxSize: 33554432
olcDbNoSync: TRUE
olcRootDN: cn=admin,${BASE_DN}
olcRootPW: ${adminPassword}
olcDbIndex: objectClass eq
olcDbIndex: uid,cn eq
olcDbIndex: member,memberUid eq
olcAccess: {0}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {1}to * by users read by * none

dn: olcOverlay={0}memberof,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {0}memberof
olcMemberOfGroupOC: groupOfNames
olcMemberOfMemberAD: member
olcMemberOfMemberOfAD: memberOf
`;
}

async function load(url: string, adminDn: string, adminPassword: string): Promise<void> {
  const c = new Client({ url, timeout: 5000, connectTimeout: 5000 });
  try {
    await c.bind(adminDn, adminPassword);
    await c.add(BASE_DN, { objectClass: ['dcObject', 'organization'], o: 'Cortado test', dc: 'cortado' });
    for (const ou of ['people', 'groups', 'services']) {
      await c.add(`ou=${ou},${BASE_DN}`, { objectClass: 'organizationalUnit', ou });
    }
    await c.add(SVC_DN, { objectClass: ['organizationalRole', 'simpleSecurityObject'], cn: 'svc', userPassword: ssha(SVC_PASSWORD) });
    let n = 10000;
    for (const u of Object.values(USERS)) {
      n += 1;
      await c.add(u.dn, {
        objectClass: ['inetOrgPerson', 'posixAccount'],
        uid: u.uid,
        cn: u.cn,
        sn: u.cn.split(' ').pop() ?? u.cn,
        displayName: u.cn,
        mail: u.mail,
        uidNumber: String(n),
        gidNumber: String(n),
        homeDirectory: `/home/u${n}`,
        userPassword: ssha(u.password),
      });
    }
    await c.add(ANALYSTS_DN, { objectClass: 'groupOfNames', cn: 'analysts', member: USERS.alice.dn });
    await c.add(POSIX_ANALYSTS_DN, { objectClass: 'posixGroup', cn: 'posix-analysts', gidNumber: '5000', memberUid: USERS.alice.uid });
    await c.add(ADMINS_DN, { objectClass: 'groupOfNames', cn: 'admins', member: USERS.oneil.dn });
    await c.add(POSIX_ADMINS_DN, { objectClass: 'posixGroup', cn: 'posix-admins', gidNumber: '5001', memberUid: USERS.oneil.uid });
  } finally {
    await c.unbind().catch(() => undefined);
  }
}

async function waitReady(url: string, proc: ChildProcess, stderr: () => string): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`slapd exited: ${stderr().slice(-2000)}`);
    const c = new Client({ url, timeout: 1000, connectTimeout: 500 });
    try {
      await c.search('', { scope: 'base', attributes: ['namingContexts'] });
      return;
    } catch {
      if (Date.now() - started > 10_000) throw new Error(`slapd did not start: ${stderr().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 30));
    } finally {
      await c.unbind().catch(() => undefined);
    }
  }
}

export async function startSlapd(): Promise<Slapd> {
  const slapd = findBinary('slapd');
  const slapadd = findBinary('slapadd');
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-slapd-'));
  const adminDn = `cn=admin,${BASE_DN}`;
  const adminPassword = randomBytes(12).toString('hex');
  try {
    mkdirSync(path.join(dir, 'slapd.d'));
    mkdirSync(path.join(dir, 'db'));
    writeFileSync(path.join(dir, 'config.ldif'), configLdif(dir, adminPassword));
    const add = spawnSync(slapadd, ['-n0', '-F', path.join(dir, 'slapd.d'), '-l', path.join(dir, 'config.ldif')], { encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`slapadd (cn=config) failed: ${add.stderr}`);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  // A free port can be taken between probing and slapd's bind: retry a few times.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const url = `ldap://127.0.0.1:${port}`;
    const proc = endWithProcess(spawn(slapd, ['-F', path.join(dir, 'slapd.d'), '-h', `${url}/`, '-d', '256'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    }));
    let stderr = '';
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (d: string) => { stderr += d; });
    const stop = async (): Promise<void> => {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGKILL');
          await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
        }
      }
    };
    try {
      await waitReady(url, proc, () => stderr);
      await load(url, adminDn, adminPassword);
    } catch (err) {
      await stop();
      if (attempt < 3 && /Address already in use/.test(stderr)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return {
      url, port, dir, baseDn: BASE_DN, adminDn, adminPassword, proc,
      log: () => stderr,
      binds: () => (stderr.match(/ op=\d+ BIND dn=/g) ?? []).length,
      async stop() {
        await stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}
