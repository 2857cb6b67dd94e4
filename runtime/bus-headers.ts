/**
 * What travels with every message (request id, user, deadline, hop count, database scope) and
 * how it is written into NATS headers and read back: one place for both directions.
 */
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { Header } from '../protocol/headers.js';
import { traceOf } from './tracing.js';

/** What travels with every message: who asked, for which request, until when. */
export interface Ctx {
  requestId: string;
  user?: string;
  /** epoch ms; nobody waits for an answer after it */
  deadline?: number;
  hop?: number;
  /**
   * whose database connection the work runs on: `s:<id>` (an /auth/login session) or
   * `t:<id>` (an API token with a db_config); absent: the server's own database config
   */
  scope?: string;
  /**
   * W3C traceparent of the span the work runs under (runtime/tracing.ts); absent at the edge,
   * where the request's own is found by its request id
   */
  trace?: string;
}

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
