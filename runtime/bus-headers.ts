/**
 * What travels with every message (request id, user, deadline, hop count, database scope) and
 * how it is written into NATS headers and read back: one place for both directions.
 */
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { Header, type Ctx } from '../protocol/headers.js';
import { traceOf } from './tracing.js';

export type { Ctx };

/** The headers of a sign of life (Header.Alive), made once: they never change. */
export const ALIVE_HEADERS: MsgHdrs = (() => {
  const h = natsHeaders();
  h.set(Header.Alive, '1');
  return h;
})();

export function headersFor(ctx: Ctx): MsgHdrs {
  const h = natsHeaders();
  h.set(Header.RequestId, ctx.requestId);
  if (ctx.user) h.set(Header.User, ctx.user);
  if (ctx.deadline !== undefined) h.set(Header.Deadline, String(ctx.deadline));
  if (ctx.hop !== undefined) h.set(Header.Hop, String(ctx.hop));
  if (ctx.scope) h.set(Header.Scope, ctx.scope);
  const trace = traceOf(ctx);
  if (trace) h.set(Header.TraceParent, trace);
  return h;
}

/** An event says who, which request and which trace; deadlines, hops and scopes belong to requests. */
export function eventHeaders(ctx: Ctx): MsgHdrs {
  const h = natsHeaders();
  h.set(Header.RequestId, ctx.requestId);
  if (ctx.user) h.set(Header.User, ctx.user);
  const trace = traceOf(ctx);
  if (trace) h.set(Header.TraceParent, trace);
  return h;
}

export function ctxFrom(h: MsgHdrs | undefined): Ctx {
  const ctx: Ctx = { requestId: h?.get(Header.RequestId) || randomUUID() };
  const user = h?.get(Header.User);
  if (user) ctx.user = user;
  const deadline = Number(h?.get(Header.Deadline));
  if (Number.isFinite(deadline) && deadline > 0) ctx.deadline = deadline;
  const hop = Number(h?.get(Header.Hop));
  if (Number.isFinite(hop) && hop > 0) ctx.hop = hop;
  const scope = h?.get(Header.Scope);
  if (scope) ctx.scope = scope;
  const trace = h?.get(Header.TraceParent);
  if (trace) ctx.trace = trace;
  return ctx;
}
