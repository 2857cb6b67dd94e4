/**
 * Fernet against the spec's published vectors (github.com/fernet/spec: generate.json,
 * verify.json, invalid.json), against Python's `cryptography` both ways when it is installed,
 * and the secret box built on it: no key → refuse to store secrets; secrets sealed in
 * db_config objects and config values, opened back; a changed key is a clear error.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { CortadoError } from '../../protocol/errors.js';
import { Fernet, generateFernetKey, InvalidFernetToken } from '../../actors/lib/crypto/fernet.js';
import { createSecretBox, isSealed, isSecretKey } from '../../actors/lib/crypto/secrets.js';

// ---- the spec's vectors (version 0x80) ------------------------------------------------------

const SECRET = 'cw_0x689RpI-jtRR7oE8h_eQsKImvJapLeSbXpwF4e4=';
const GENERATE = {
  token: 'gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==',
  now: '1985-10-26T01:20:00-07:00',
  iv: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  src: 'hello',
};
const VERIFY = { token: GENERATE.token, now: '1985-10-26T01:20:01-07:00', ttl_sec: 60, src: 'hello' };
const NOW = '1985-10-26T01:20:01-07:00';
const INVALID: Array<{ desc: string; token: string; now: string; reason: string }> = [
  { desc: 'incorrect mac', token: 'gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykQUFBQUFBQUFBQQ==', now: NOW, reason: 'signature' },
  { desc: 'too short', token: 'gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPA==', now: NOW, reason: 'malformed' },
  { desc: 'invalid base64', token: '%%%%%%%%%%%%%AECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykRtfsH-p1YsUD2Q==', now: NOW, reason: 'malformed' },
  { desc: 'payload size not multiple of block size', token: 'gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPOm73QeoCk9uGib28Xe5vz6oxq5nmxbx_v7mrfyudzUm', now: NOW, reason: 'malformed' },
  { desc: 'payload padding error', token: 'gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0ODz4LEpdELGQAad7aNEHbf-JkLPIpuiYRLQ3RtXatOYREu2FWke6CnJNYIbkuKNqOhw==', now: NOW, reason: 'decryption' },
  { desc: 'far-future TS (unacceptable clock skew)', token: 'gAAAAAAdwStRAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAnja1xKYyhd-Y6mSkTOyTGJmw2Xc2a6kBd-iX9b_qXQcw==', now: NOW, reason: 'future' },
  { desc: 'expired TTL', token: 'gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykRtfsH-p1YsUD2Q==', now: '1985-10-26T01:21:31-07:00', reason: 'expired' },
  { desc: 'incorrect IV (causes padding error)', token: 'gAAAAAAdwJ6xBQECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAkLhFLHpGtDBRLRTZeUfWgHSv49TF2AUEZ1TIvcZjK1zQ==', now: NOW, reason: 'decryption' },
  { desc: 'trailing characters after b64 padding', token: 'gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==trailingdata', now: NOW, reason: 'malformed' },
  { desc: 'invalid characters in b64', token: '*gAAAAAAdwJ6wAAECAwQFBgcI!CQoLDA0ODy021?cpGVWKZ_eEwC@GM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==', now: NOW, reason: 'malformed' },
  { desc: 'invalid non-urlsafe characters in b64', token: 'gAAAAAAdwJ6wAAEC/AwQFBgcICQoLDA0ODy+021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==', now: NOW, reason: 'malformed' },
];

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidFernetToken) return err.reason;
    throw err;
  }
  return 'accepted';
}

t.test('the spec vector: generate', async (t) => {
  const f = new Fernet(SECRET);
  const token = f.encrypt(GENERATE.src, { now: Date.parse(GENERATE.now), iv: Buffer.from(GENERATE.iv) });
  t.equal(token, GENERATE.token, 'byte for byte, with = padding as Python writes it');
  t.equal(Date.parse(GENERATE.now) / 1000, 499162800, 'the timestamp the vector carries');
});

t.test('the spec vector: verify (with its TTL)', async (t) => {
  const f = new Fernet(SECRET);
  t.equal(f.decrypt(VERIFY.token, { ttlSeconds: VERIFY.ttl_sec, now: Date.parse(VERIFY.now) }).toString('utf8'), VERIFY.src);
  t.equal(f.decrypt(VERIFY.token).toString('utf8'), VERIFY.src, 'without a TTL the age does not matter');
  t.equal(f.decrypt(VERIFY.token.replace(/=+$/, '')).toString('utf8'), VERIFY.src, 'padding may be left off');
});

t.test('the spec vectors: every invalid token is refused, for its reason', async (t) => {
  const f = new Fernet(SECRET);
  for (const v of INVALID) {
    t.equal(reasonOf(() => f.decrypt(v.token, { ttlSeconds: 60, now: Date.parse(v.now) })), v.reason, v.desc);
  }
});

t.test('more invalid tokens: wrong version, wrong key, altered bytes, not a string', async (t) => {
  const f = new Fernet(SECRET);
  const raw = Buffer.from(GENERATE.token, 'base64url');
  const withVersion = Buffer.from(raw);
  withVersion[0] = 0x81;
  t.equal(reasonOf(() => f.decrypt(withVersion.toString('base64url'))), 'version', 'version 0x81');

  // every single-byte change anywhere in the token is caught
  const changed = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    const b = Buffer.from(raw);
    b[i] = (b[i] as number) ^ 0x01;
    changed.add(reasonOf(() => f.decrypt(b.toString('base64url'))));
  }
  t.same([...changed].sort(), ['signature', 'version'], 'a flipped bit is a bad signature (or, in byte 0, a bad version)');

  t.equal(reasonOf(() => new Fernet(generateFernetKey()).decrypt(GENERATE.token)), 'signature', 'another key');
  t.equal(reasonOf(() => f.decrypt('')), 'malformed', 'empty');
  t.equal(reasonOf(() => f.decrypt(42 as unknown as string)), 'malformed', 'not a string');
  const e = (() => {
    try {
      f.decrypt('gAAAA');
    } catch (err) {
      return err as Error;
    }
    return undefined;
  })();
  t.match(e?.message, /Fernet token/, 'the message says what is wrong');
});

t.test('round trips, keys, and key errors that never show the key', async (t) => {
  const key = generateFernetKey();
  t.match(key, /^[A-Za-z0-9_-]{43}=$/, '44 url-safe characters with padding');
  t.equal(Buffer.from(key, 'base64url').length, 32);
  t.not(generateFernetKey(), key, 'random');

  const f = new Fernet(key);
  for (const text of ['', 'p@ss wörd ✓', 'x'.repeat(1000)]) {
    t.equal(f.decrypt(f.encrypt(text)).toString('utf8'), text, `round trip of ${text.length} characters`);
  }
  const bytes = Buffer.from([0, 255, 1, 254]);
  t.same(f.decrypt(f.encrypt(bytes)), bytes, 'bytes in, bytes out');
  t.not(f.encrypt('same'), f.encrypt('same'), 'a random IV per token');
  t.ok(new Fernet(key.slice(0, 43)), 'a key without its padding is accepted');
  t.ok(new Fernet(` ${key}\n`), 'surrounding white space is ignored');

  const fresh = f.encrypt('now');
  t.equal(f.decrypt(fresh, { ttlSeconds: 60 }).toString(), 'now', 'a fresh token within its TTL');
  t.equal(reasonOf(() => f.decrypt(fresh, { ttlSeconds: 60, now: Date.now() + 120_000 })), 'expired');

  const standard = Buffer.from(key, 'base64url').toString('base64');
  const bad = ['', 'short', key.slice(0, 40), `${key.slice(0, 43)}A=`, Buffer.alloc(31).toString('base64url'), Buffer.alloc(33).toString('base64url'),
    standard.includes('+') || standard.includes('/') ? standard : `${key.slice(0, 42)}+=`];
  for (const k of bad) {
    let err: unknown;
    try {
      new Fernet(k);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof CortadoError && err.code === 'CONFIG_INVALID', `refused: ${k.length} characters`);
    t.match((err as Error).message, /config_db\.encryption_key/, 'names the setting');
    if (k.length > 4) t.notOk((err as Error).message.includes(k), 'never the key');
  }
});

// ---- Python's cryptography, both ways --------------------------------------------------------

const python = spawnSync('python3', ['-c', 'import cryptography.fernet'], { encoding: 'utf8' });
const hasPython = python.status === 0;

t.test('interoperates with Python cryptography', { skip: hasPython ? false : 'python3 with cryptography is not installed' }, async (t) => {
  const run = (code: string, input: string): string => {
    const r = spawnSync('python3', ['-c', code], { input, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  // a key Python made, a token Python made → read here
  const [pyKey, pyToken] = run(
    'import sys\nfrom cryptography.fernet import Fernet\nk = Fernet.generate_key()\nprint(k.decode())\nprint(Fernet(k).encrypt(sys.stdin.read().encode()).decode())',
    'from python ✓').split('\n');
  t.equal(new Fernet(pyKey as string).decrypt(pyToken as string).toString('utf8'), 'from python ✓');

  // a key and a token made here → read by Python
  const key = generateFernetKey();
  const token = new Fernet(key).encrypt('from node ✓');
  t.equal(run('import sys\nfrom cryptography.fernet import Fernet\nk, tok = sys.stdin.read().split()\nsys.stdout.buffer.write(Fernet(k.encode()).decrypt(tok.encode(), ttl=60))', `${key} ${token}`), 'from node ✓');
});

// ---- the secret box ----------------------------------------------------------------------------

t.test('no encryption key: secrets are refused, never sealed with a made-up key', async (t) => {
  const box = createSecretBox({ config_db: { encryption_key: '' } });
  t.equal(box.enabled, false);
  let err: unknown;
  try {
    box.seal('hunter2');
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof CortadoError);
  t.equal((err as CortadoError).code, 'CONFIG_INVALID');
  t.equal((err as CortadoError).message, 'config_db.encryption_key is not set: Cortado refuses to store secrets');
  t.throws(() => box.sealSecretsIn({ host: 'db', password: 'hunter2' }), { code: 'CONFIG_INVALID' }, 'nor inside a db_config');
  t.same(box.sealSecretsIn({ host: 'db', password: '', api_key: null }), { host: 'db', password: '', api_key: null }, 'empty secrets need no key');
  t.throws(() => box.open({ enc: GENERATE.token }), { code: 'CONFIG_INVALID' }, 'and stored ones cannot be read');
});

t.test('an invalid key fails when the box is made, naming the setting', async (t) => {
  t.throws(() => createSecretBox({ config_db: { encryption_key: 'not-a-fernet-key' } }), { code: 'CONFIG_INVALID', message: /config_db\.encryption_key/ });
});

t.test('sealing and opening secrets in db_config objects and config values', async (t) => {
  const key = generateFernetKey();
  const box = createSecretBox({ config_db: { encryption_key: key } });
  t.equal(box.enabled, true);

  const sealed = box.seal('hunter2');
  t.ok(isSealed(sealed) && box.isSealed(sealed));
  t.same(Object.keys(sealed), ['enc']);
  t.equal(new Fernet(key).decrypt(sealed.enc).toString(), 'hunter2', 'a plain Fernet token under the configured key');
  t.equal(box.open(sealed), 'hunter2');

  const dbConfig = {
    provider: 'postgresql', host: 'db.internal', port: 5432, user: 'reader', password: 'pw-1',
    ssl: { enabled: true, token: 'tok-2' }, trino: { catalog: 'hive', api_key: 'k-3' }, bigquery: { credentials_json: { private_key: 'pk-4' } },
    empty: { password: '' }, list: [{ secret: 's-5' }],
  };
  const stored = box.sealSecretsIn(dbConfig);
  const text = JSON.stringify(stored);
  for (const plain of ['pw-1', 'tok-2', 'k-3', 'pk-4', 's-5']) t.notOk(text.includes(plain), `${plain} is not in what is stored`);
  t.match(stored, { provider: 'postgresql', host: 'db.internal', port: 5432, user: 'reader', trino: { catalog: 'hive' }, empty: { password: '' } }, 'the rest as it was');
  t.ok(isSealed(stored.password) && isSealed(stored.ssl.token) && isSealed(stored.trino.api_key));
  t.same(dbConfig.password, 'pw-1', 'the input is not changed');
  t.same(box.sealSecretsIn(stored), stored, 'sealing twice changes nothing');
  t.same(box.openSecretsIn(stored), dbConfig, 'opened back, a non-string secret included');

  // one config key: a secret path seals the value; another seals the secrets inside it
  const bind = box.sealForKey('ldap.bind_password', 'b-6');
  t.ok(isSealed(bind));
  t.equal(box.openForKey('ldap.bind_password', bind), 'b-6');
  const section = box.sealForKey('email.smtp', { host: 'mail', password: 'm-7' }) as Record<string, unknown>;
  t.equal(section.host, 'mail');
  t.ok(isSealed(section.password));
  t.same(box.openForKey('email.smtp', section), { host: 'mail', password: 'm-7' });
  t.equal(box.sealForKey('query.max_limit', 500), 500, 'not a secret: as it is');
  t.ok(isSecretKey('jira.api_token') && isSecretKey('config_db.encryption_key') && !isSecretKey('ldap.server'));

  // the key changed since the value was stored
  const other = createSecretBox({ config_db: { encryption_key: generateFernetKey() } });
  t.throws(() => other.open(sealed), { code: 'CONFIG_INVALID', message: /cannot be decrypted with config_db\.encryption_key/ });
  t.notOk(isSealed({ enc: 'x', extra: 1 }), 'only { enc } (and json: true) counts as sealed');
  t.notOk(isSealed('gAAAA'));
});
