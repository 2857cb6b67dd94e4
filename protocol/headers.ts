/** Header names carried by every bus message (and echoed on HTTP responses). */
export const Header = {
  /** set at the edge, passed on by every hop */
  RequestId: 'cortado-request-id',
  /** the user, where one is known */
  User: 'cortado-user',
  /** absolute deadline (epoch ms) after which nobody waits for the answer */
  Deadline: 'cortado-deadline',
  /** incremented per forward; capped to stop loops */
  Hop: 'cortado-hop',
  /** the database scope of the request (`s:<auth session id>`, `t:<token id>`); absent: the server's own config */
  Scope: 'cortado-scope',
  /** W3C Trace Context of the span that sent the message (runtime/tracing.ts) */
  TraceParent: 'traceparent',
  /** event id, used by JetStream to drop duplicates */
  MsgId: 'Nats-Msg-Id',
  /** on an empty message to a request's reply subject: its handler still works on it (runtime/bus-requests.ts) */
  Alive: 'cortado-alive',
} as const;
export type Header = (typeof Header)[keyof typeof Header];

/** The HTTP header that carries the request id, in and out. */
export const HTTP_REQUEST_ID = 'x-request-id';

export const MAX_HOPS = 16;

/**
 * What travels with every message, in the headers above: who asked, for which request, until
 * when. The bus (runtime/bus-headers.ts) writes it into the headers and reads it back.
 */
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
