/**
 * A real SMTP server on loopback (smtp-server), reading what arrives with mailparser.
 *
 * - `tls: 'none'`: plain SMTP, no STARTTLS offered (AUTH allowed in the clear, as a local relay).
 * - `tls: 'starttls'`: STARTTLS offered with a fresh self-signed certificate for localhost /
 *   127.0.0.1 (`cert` is its PEM: the client must trust it, nothing turns verification off);
 *   AUTH only after STARTTLS.
 * - `tls: 'implicit'`: TLS from the first byte (port 465 style).
 * With `auth`, only that user and password get in; without, no AUTH is needed. With `hold`, a
 * message is counted as received when its data has arrived, and the server's "250 accepted"
 * waits until `hold()` resolves (a client that dies in between sent it without knowing).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  /** the user that logged in, if any */
  user: string | undefined;
  /** whether the session was encrypted when the mail came */
  secure: boolean;
  parsed: ParsedMail;
}

export interface SmtpServer {
  host: string;
  port: number;
  cert: string | undefined;
  received: ReceivedMail[];
  /** failed AUTH attempts seen */
  authFailures: number;
  /** resolves once `n` mails arrived (rejects after `timeoutMs`) */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export function selfSignedCert(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'cortado-smtp-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
      '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ], { stdio: 'ignore' });
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startSmtp(opts: { tls?: 'none' | 'starttls' | 'implicit'; auth?: { user: string; pass: string }; hold?: () => Promise<void> } = {}): Promise<SmtpServer> {
  const mode = opts.tls ?? 'none';
  const pair = mode === 'none' ? undefined : selfSignedCert();
  const received: ReceivedMail[] = [];
  const waiters: Array<() => void> = [];
  let authFailures = 0;
  const server = new SMTPServer({
    secure: mode === 'implicit',
    ...(pair ? { key: pair.key, cert: pair.cert } : {}),
    disabledCommands: mode === 'none' ? ['STARTTLS', ...(opts.auth ? [] : ['AUTH'])] : opts.auth ? [] : ['AUTH'],
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: mode === 'none',
    authOptional: !opts.auth,
    logger: false,
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username });
      authFailures++;
      const err = new Error('Invalid username or password') as Error & { responseCode: number };
      err.responseCode = 535;
      return cb(err);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        void simpleParser(Buffer.concat(chunks)).then((parsed) => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            user: typeof session.user === 'string' ? session.user : undefined,
            secure: session.secure,
            parsed,
          });
          for (const w of waiters.splice(0)) w();
          return opts.hold ? opts.hold().then(() => cb(), () => cb()) : cb();
        }, (err: Error) => cb(err));
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    host: '127.0.0.1',
    port,
    cert: pair?.cert,
    received,
    get authFailures() {
      return authFailures;
    },
    async waitFor(n, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      while (received.length < n) {
        const left = end - Date.now();
        if (left <= 0) throw new Error(`expected ${n} mail(s), got ${received.length}`);
        await new Promise<void>((r) => {
          const timer = setTimeout(r, left);
          waiters.push(() => { clearTimeout(timer); r(); });
        });
      }
      return received;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
