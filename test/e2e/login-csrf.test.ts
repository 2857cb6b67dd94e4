/**
 * Login CSRF on both HTTP servers (uWebSockets.js where it loads, and the node:http twin): a
 * page of another site posting a sign-in form to Cortado used to leave the visitor's browser
 * signed in as whoever's credentials the form held (the attacker's), so what they asked next was
 * recorded under the attacker's account. Now every sign-in (/admin/login, /assistant/login,
 * /auth/login, /auth/auto-session) is told from this server's own pages by Sec-Fetch-Site (else
 * Origin against Host): from another site the admin panel is refused, a form post or a page CORS
 * does not allow is refused, and an allowed page's JSON sign-in (the embedded widgets') gets its
 * session in the body for X-Session-ID and never a cookie. A real Chromium posts the forms too.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { generateFernetKey } from '../../actors/lib/crypto/fernet.js';
import { uwsAvailable } from '../../edge/http/server.js';
import { launchBrowser } from '../helpers/browser.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb, dropRoles } from '../helpers/pg.js';
import { ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD, USERS } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';

const tag = `${process.pid}_${Date.now().toString(36)}`;
const WIDGET = 'http://widget.example';
const EVIL = 'http://evil.example';
const slapd = await startSlapd();
const nats = await startNats();
const db = await createTestDb('csrf');
const role = `csrf_${tag}`;
await db.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'role-pw'; GRANT CONNECT ON DATABASE ${db.name} TO ${role};`);
const key = generateFernetKey();
const extra = (httpServer?: string) => ({
  ...(httpServer ? { app: { http_server: httpServer } } : {}),
  admin: { enabled: true, username: 'admin', password: 'local-pw' },
  ldap: {
    enabled: true, server: slapd.url, connect_timeout: 2, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
    base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
  },
  config_db: { encryption_key: key },
  plugins: { assistant_login: { enabled: true }, auth: { enabled: true, auto_session: { enabled: true } } },
  // the embedded widget's page may call Cortado; other sites may not
  cors: { allow_origins: [WIDGET] },
});
const dbRef = { host: db.host, port: db.port, name: db.name, user: db.user };
const stack = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, extra: extra() }));
// a second edge on the same bus, on the other HTTP server
const otherKind = stack.running.edge?.kind === 'uws' || !uwsAvailable() ? 'node' : 'uws';
const other = await startStack(testConfig({ natsUrl: nats.url, db: dbRef, extra: extra(otherKind) }), { edge: true, actors: [] });
const servers = [
  { name: stack.running.edge!.kind, url: stack.url },
  { name: other.running.edge!.kind, url: other.url },
];
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await other.stop();
  await stack.stop();
  await db.drop();
  await dropRoles(role);
  await nats.stop();
  await slapd.stop();
});
t.comment(`HTTP servers: ${servers.map((s) => s.name).join(' and ')}`);

/** The sign-ins, each with credentials that are right. */
const SIGN_INS = [
  { route: '/admin/login', body: { username: 'admin', password: 'local-pw' } },
  { route: '/assistant/login', body: { username: 'alice', password: USERS.alice.password } },
  { route: '/auth/login', body: { username: role, password: 'role-pw' } },
] as const;

type Headers = Record<string, string>;
async function post(url: string, body: string, headers: Headers): Promise<{ status: number; cookie: string | null; json: any }> {
  const res = await fetch(url, { method: 'POST', redirect: 'manual', headers, body });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, cookie: res.headers.get('set-cookie'), json };
}
const form = (b: Record<string, string>) => new URLSearchParams(b).toString();

for (const { name, url } of servers) {
  const host = new URL(url).host;
  t.test(`${name}: another site's form posts sign nobody in`, async (t) => {
    // how browsers mark a cross-site form post: new ones with Sec-Fetch-Site, older ones with Origin only
    const marks: Array<[string, Headers]> = [
      ['Sec-Fetch-Site: cross-site', { origin: EVIL, 'sec-fetch-site': 'cross-site' }],
      ['Origin only', { origin: EVIL }],
      ['Origin: null (a sandboxed frame)', { origin: 'null' }],
      ['a sibling site (same-site)', { origin: `http://sub.${host}`, 'sec-fetch-site': 'same-site' }],
      ['an allowed page', { origin: WIDGET, 'sec-fetch-site': 'cross-site' }],
    ];
    const bodies: Array<[string, (b: Record<string, string>) => [string, Headers]]> = [
      ['urlencoded', (b) => [form(b), { 'content-type': 'application/x-www-form-urlencoded' }]],
      ['text/plain', (b) => [`${JSON.stringify(b)}`, { 'content-type': 'text/plain' }]],
      ['multipart', (b) => [`--x\r\nContent-Disposition: form-data; name="username"\r\n\r\n${b.username}\r\n--x--\r\n`, { 'content-type': 'multipart/form-data; boundary=x' }]],
    ];
    for (const { route, body } of SIGN_INS) {
      for (const [mark, h] of marks) {
        for (const [kind, make] of bodies) {
          const [raw, type] = make(body);
          const r = await post(`${url}${route}`, raw, { ...h, ...type });
          t.equal(r.status, 403, `${route}, ${kind}, ${mark}`);
          t.equal(r.json?.error?.code, 'FORBIDDEN');
          t.equal(r.cookie, null, 'no cookie');
        }
      }
    }
  });

  t.test(`${name}: the admin panel signs in from its own pages only`, async (t) => {
    for (const h of [{ origin: WIDGET, 'sec-fetch-site': 'cross-site' }, { origin: WIDGET }, { origin: EVIL, 'sec-fetch-site': 'same-site' }] as Headers[]) {
      const r = await post(`${url}/admin/login`, JSON.stringify({ username: 'admin', password: 'local-pw' }), { ...h, 'content-type': 'application/json' });
      t.equal(r.status, 403, JSON.stringify(h));
      t.match(r.json?.error?.message, /admin panel signs in from its own pages only/);
    }
  });

  t.test(`${name}: an allowed page's JSON sign-in gets its session in the body, never a cookie`, async (t) => {
    const h = { origin: WIDGET, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' };
    const gate = await post(`${url}/assistant/login`, JSON.stringify(SIGN_INS[1].body), h);
    t.equal(gate.status, 200, JSON.stringify(gate.json));
    t.equal(gate.cookie, null, 'no cookie from another site');
    const who = await call(`${url}/api/workspace`, { headers: { 'x-session-id': gate.json.session_id, origin: WIDGET } });
    t.equal(who.status, 200, `the widget's X-Session-ID works: ${who.text}`);
    t.equal(who.body.user, 'alice');
    const db = await post(`${url}/auth/login`, JSON.stringify(SIGN_INS[2].body), h);
    t.equal(db.status, 200, JSON.stringify(db.json));
    t.equal(db.cookie, null);
    t.equal((await call(`${url}/auth/session`, { headers: { 'x-session-id': db.json.session_id } })).status, 200);
    const auto = await post(`${url}/auth/auto-session`, '', { origin: WIDGET, 'sec-fetch-site': 'cross-site' });
    t.equal(auto.status, 200, JSON.stringify(auto.json));
    t.equal(auto.cookie, null);
    // a page CORS does not allow cannot sign in even with JSON (no browser would send it: its preflight fails)
    for (const route of ['/assistant/login', '/auth/login', '/auth/auto-session']) {
      const r = await post(`${url}${route}`, JSON.stringify(route === '/auth/login' ? SIGN_INS[2].body : SIGN_INS[1].body), { ...h, origin: EVIL });
      t.equal(r.status, 403, `${route} from ${EVIL}`);
      t.match(r.json?.error?.message, /cors\.allow_origins/);
      t.equal(r.cookie, null);
    }
  });

  t.test(`${name}: this server's own pages, and clients that are no browser, still sign in with a cookie`, async (t) => {
    const own = `http://${host}`;
    const marks: Array<[string, Headers]> = [
      ['Sec-Fetch-Site: same-origin', { origin: own, 'sec-fetch-site': 'same-origin' }],
      ['Origin only, the same host', { origin: own }],
      ['no Origin (curl, a script)', {}],
    ];
    for (const { route, body } of SIGN_INS) {
      for (const [mark, h] of marks) {
        const r = await post(`${url}${route}`, JSON.stringify(body), { ...h, 'content-type': 'application/json' });
        t.equal(r.status, 200, `${route}, ${mark}: ${JSON.stringify(r.json)}`);
        t.match(r.cookie ?? '', /^cortado_(admin|assistant|auth)=.+HttpOnly; SameSite=Strict/, 'the cookie');
      }
    }
    // the panel's form without script, from its own page
    const r = await post(`${url}/admin/login`, form(SIGN_INS[0].body), { origin: own, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' });
    t.equal(r.status, 303);
    t.match(r.cookie ?? '', /^cortado_admin=/);
  });
}

/** A page on another site (localhost is another site than 127.0.0.1) whose form posts itself to Cortado. */
async function evilPage(action: string, fields: Record<string, string>, enctype = 'application/x-www-form-urlencoded'): Promise<{ url: string; close(): Promise<void> }> {
  const inputs = Object.entries(fields).map(([k, v]) => `<input name="${k}" value="${v.replace(/"/g, '&quot;')}">`).join('');
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><body><form method="post" enctype="${enctype}" action="${action}">${inputs}</form><script>document.forms[0].submit()</script></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://localhost:${(server.address() as AddressInfo).port}/`, close: () => new Promise((r) => server.close(() => r())) };
}

for (const { name, url } of servers) {
  t.test(`${name}: in Chromium, another site's auto-submitting forms leave the browser signed out`, async (t) => {
    for (const { route, body } of SIGN_INS) {
      for (const enctype of ['application/x-www-form-urlencoded', 'text/plain']) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const evil = await evilPage(`${url}${route}`, body, enctype);
        const answered = page.waitForResponse((r) => r.url().startsWith(`${url}${route}`));
        await page.goto(evil.url);
        const res = await answered;
        t.equal(res.status(), 403, `${route} (${enctype}) from another site: ${res.status()}`);
        // the visitor then opens Cortado itself: not signed in as anyone
        await page.goto(`${url}/health`);
        const cookies = await context.cookies(url);
        t.same(cookies.map((c) => c.name), [], `${route} (${enctype}): no cookie of Cortado's in the browser`);
        for (const kind of ['admin', 'assistant', 'auth']) {
          const s = await page.evaluate(async (path) => (await fetch(path)).status, `/${kind}/session`);
          t.equal(s, 401, `${route} (${enctype}): GET /${kind}/session`);
        }
        await context.close();
        await evil.close();
      }
    }
  });
}
