/**
 * Who is calling: the API token of an MCP request, checked by the identity actor before any
 * session exists. The token arrives in `x-mcp-token`, as `Authorization: Bearer ctd_…` (what
 * Streamable HTTP clients send), or in the `token` query parameter (clients that can only be
 * given a URL). The query is read as URLSearchParams parses it (`%74oken=` is `token=`), and
 * the edge's request log line redacts with the same decoding (protocol/log.ts redactUrl: any
 * secret-named parameter, encoded or not, and anything shaped like `ctd_…`), so a token that
 * opens a session is never logged in clear; nothing here names it either.
 */
import { createHash } from 'node:crypto';
import type { Bus } from '../../protocol/bus.js';
import { CortadoError } from '../../protocol/errors.js';
import type { ApiTokenInfo } from '../../protocol/schemas/identity.js';
import { TokenCheck } from '../../protocol/subjects.js';
import type { HttpRequest } from '../http/server.js';

export const TOKEN_HEADER = 'x-mcp-token';
export const TOKEN_QUERY = 'token';

/** The token the request carries, if any: header first, then bearer, then query. */
export function tokenOf(req: HttpRequest): string | undefined {
  const header = req.headers[TOKEN_HEADER]?.trim();
  if (header) return header;
  const auth = req.headers.authorization?.trim();
  if (auth && /^bearer\s+/i.test(auth)) {
    const bearer = auth.replace(/^bearer\s+/i, '').trim();
    if (bearer) return bearer;
  }
  const all = req.query.getAll(TOKEN_QUERY);
  // two different tokens in one URL: which one was meant is not for the server to guess
  if (new Set(all).size > 1) throw new CortadoError('UNAUTHORIZED', `send one token (the ${TOKEN_QUERY} query parameter is repeated with different values)`);
  const query = all[0]?.trim();
  return query || undefined;
}

/** Compare tokens of later requests with the session's without keeping the token readable. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface Caller {
  token: string;
  info: ApiTokenInfo;
}

/** The valid token of this request, or UNAUTHORIZED (missing, unknown, expired, revoked). */
export async function authenticate(bus: Bus, req: HttpRequest, rid: string): Promise<Caller> {
  const token = tokenOf(req);
  if (!token) {
    throw new CortadoError('UNAUTHORIZED', `send an API token in the ${TOKEN_HEADER} header (or the ${TOKEN_QUERY} query parameter)`);
  }
  if (token.length > 512) throw new CortadoError('UNAUTHORIZED', 'the token is missing, invalid, expired or revoked');
  const { info } = await bus.request(TokenCheck, { token }, { requestId: rid });
  return { token, info };
}
