/**
 * Cookie sessions at the edge: the cookie carries the session secret (HttpOnly, SameSite=Strict,
 * Secure behind TLS); the identity actor keeps the session, and edge/caller.ts decides who a
 * request is (writes made with a cookie must echo the session's CSRF token in `x-csrf-token`).
 * The client address honours X-Forwarded-For only from app.trusted_proxies.
 */
import type { SessionKind } from '../../protocol/schemas/identity.js';
import type { Config } from '../../config/schema.js';
import type { HttpRequest } from './server.js';

export const COOKIE: Readonly<Record<SessionKind, string>> = { admin: 'cortado_admin', assistant: 'cortado_assistant', auth: 'cortado_auth' };
export const CSRF_HEADER = 'x-csrf-token';

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    try {
      if (!out.has(name)) out.set(name, decodeURIComponent(value));
    } catch {
      /* a malformed cookie is no cookie */
    }
  }
  return out;
}

function trusted(req: HttpRequest, config: Config): boolean {
  return config.app.trusted_proxies.includes(req.remoteAddress);
}

/** The client's address: the peer, or the first X-Forwarded-For entry when the peer is a trusted proxy. */
export function clientAddress(req: HttpRequest, config: Config): string {
  const fwd = req.headers['x-forwarded-for'];
  if (fwd && trusted(req, config)) return fwd.split(',')[0]!.trim().slice(0, 64);
  return req.remoteAddress;
}

/** Whether the browser reached us over TLS (a trusted proxy says so with X-Forwarded-Proto). */
export function overTls(req: HttpRequest, config: Config): boolean {
  return trusted(req, config) && (req.headers['x-forwarded-proto'] ?? '').toLowerCase() === 'https';
}

export function sessionCookie(kind: SessionKind, token: string, maxAgeS: number, secure: boolean): string {
  return `${COOKIE[kind]}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeS))}${secure ? '; Secure' : ''}`;
}

export function clearCookie(kind: SessionKind, secure: boolean): string {
  return `${COOKIE[kind]}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

export function sessionToken(req: HttpRequest, kind: SessionKind): string | undefined {
  return parseCookies(req.headers.cookie).get(COOKIE[kind]) || undefined;
}
