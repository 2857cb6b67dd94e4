// test-runner: alone (a timing side channel is measured: a neighbour's load is noise in it)
/**
 * User enumeration by timing, over HTTP: a wrong password for a directory user and any password
 * for a name the directory does not know answer alike — on the admin panel (its own group) and at
 * the assistant gate, with the directory behind a link that adds 5 ms to every answer (before,
 * known users answered two such round trips later). Every failed login answers no sooner than the
 * identity actor's floor (FAILED_LOGIN_FLOOR_MS) after its check began. The comparison is the
 * median difference of 40 interleaved pairs, within 3 ms, or within twice that median's standard
 * error when the machine is so loaded that the pairs themselves scatter more (a CI run with other
 * files beside it: ±20 ms); the leak this guards against was 13–22 ms. The numbers are printed.
 */
import t from 'tap';
import { FAILED_LOGIN_FLOOR_MS } from '../../actors/identity/handle.js';
import { testConfig } from '../helpers/config.js';
import { startNats } from '../helpers/nats.js';
import { ADMINS_DN, ANALYSTS_DN, PEOPLE_DN, startSlapd, SVC_DN, SVC_PASSWORD } from '../helpers/slapd.js';
import { call, startStack } from '../helpers/stack.js';
import { startTcpCounter } from '../helpers/tcp-counter.js';

const slapd = await startSlapd();
const far = await startTcpCounter({ host: '127.0.0.1', port: slapd.port }, { delayMs: 5 });
const nats = await startNats();
const stack = await startStack(testConfig({
  natsUrl: nats.url,
  extra: {
    app: { trusted_proxies: ['127.0.0.1'] },
    admin: { enabled: true, username: 'admin', password: 'local-pw', ldap_group_dn: ADMINS_DN },
    ldap: {
      enabled: true, server: `ldap://127.0.0.1:${far.port}`, connect_timeout: 2, bind_dn: SVC_DN, bind_password: SVC_PASSWORD,
      base_dn: PEOPLE_DN, user_search_filter: '(uid={username})', required_group_dn: ANALYSTS_DN, group_member_attr: 'member',
    },
    plugins: { assistant_login: { enabled: true } },
  },
}));
t.teardown(async () => {
  await stack.stop();
  await nats.stop();
  await far.close();
  await slapd.stop();
});

function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.round(p * (s.length - 1))))]!;
}

let client = 0;
/** one wrong login from a client address of its own (no lockout in the way): its time in ms */
async function wrong(route: string, username: string): Promise<number> {
  client++;
  const started = performance.now();
  const r = await call(`${stack.url}${route}`, { body: { username, password: 'wrong-password' }, headers: { 'x-forwarded-for': `10.26.${client >> 8}.${client & 255}` } });
  const ms = performance.now() - started;
  if (r.status !== 401) throw new Error(`${route} ${username}: ${r.status} ${r.text}`);
  return ms;
}

for (const route of ['/admin/login', '/assistant/login']) {
  t.test(`${route}: a directory user's wrong password and an unknown name answer alike`, async (t) => {
    const known = ['alice', 'bob', "o'neil", 'doe, jane', 'star*man'];
    for (let i = 0; i < 3; i++) { await wrong(route, known[i]!); await wrong(route, `warm-${i}`); }
    const k: number[] = [];
    const u: number[] = [];
    for (let i = 0; i < 40; i++) {
      const name = known[i % known.length]!;
      if (i % 2) { k.push(await wrong(route, name)); u.push(await wrong(route, `nobody-${i}`)); } else { u.push(await wrong(route, `nobody-${i}`)); k.push(await wrong(route, name)); }
    }
    const line = (xs: number[]) => `p10 ${quantile(xs, 0.1).toFixed(1)} / p50 ${quantile(xs, 0.5).toFixed(1)} / p90 ${quantile(xs, 0.9).toFixed(1)} ms`;
    const diffs = k.map((x, i) => x - u[i]!);
    const paired = quantile(diffs, 0.5);
    // the standard error of a median: 1.25 σ / √n, σ from the interquartile range (robust to a stall)
    const se = 1.25 * ((quantile(diffs, 0.75) - quantile(diffs, 0.25)) / 1.349) / Math.sqrt(diffs.length);
    const bound = Math.max(3, 2 * se);
    t.comment(`${route}: known ${line(k)}; unknown ${line(u)}; median paired difference ${paired.toFixed(2)} ms (standard error ${se.toFixed(2)} ms)`);
    t.ok(Math.abs(paired) < bound, `a known name is ${paired.toFixed(2)} ms slower (median of 40 interleaved pairs; within ${bound.toFixed(1)} ms)`);
    t.ok(Math.min(...k, ...u) >= FAILED_LOGIN_FLOOR_MS - 1, `no failed login answered before the ${FAILED_LOGIN_FLOOR_MS} ms floor (fastest ${Math.min(...k, ...u).toFixed(1)} ms)`);
  });
}

t.test('a right password is not held back by the floor', async (t) => {
  const started = performance.now();
  const r = await call(`${stack.url}/admin/login`, { body: { username: 'admin', password: 'local-pw' }, headers: { 'x-forwarded-for': '10.27.0.1' } });
  t.equal(r.status, 200, r.text);
  t.comment(`the local admin signed in in ${(performance.now() - started).toFixed(1)} ms`);
});
