/**
 * Who is calling: the API token of an MCP request, checked by the identity actor before any
 * session exists. The token arrives in `x-mcp-token`, as `Authorization: Bearer ctd_…` (what
 * Streamable HTTP clients send), or in the `token` query parameter (clients that can only be
 * given a URL). It is never logged: the edge's request line redacts `token=`, and nothing here
 * names it.
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
  const query = req.query.get(TOKEN_QUERY)?.trim();
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
