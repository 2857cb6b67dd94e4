/**
 * The one error type of Cortado and its table of stable codes.
 *
 * Every code has one HTTP status, one MCP mapping and a retryable flag.
 * docs/http-api.md carries one line per code in its error table (a test checks it).
 */

export const McpMapping = {
  /** a tool result with `isError: true` carrying the code */
  ToolError: 'tool_error',
  /** JSON-RPC InvalidParams (-32602): only bad tool arguments */
  InvalidParams: 'invalid_params',
  /** JSON-RPC InternalError (-32603) */
  InternalError: 'internal_error',
} as const;
export type McpMapping = (typeof McpMapping)[keyof typeof McpMapping];

export interface ErrorSpec {
  readonly http: number;
  readonly mcp: McpMapping;
  readonly retryable: boolean;
  /** one line for people: when it happens */
  readonly doc: string;
}

function spec(http: number, mcp: McpMapping, retryable: boolean, doc: string): ErrorSpec {
  return { http, mcp, retryable, doc };
}

export const ERRORS = {
  VALIDATION_FAILED: spec(400, McpMapping.InvalidParams, false, 'The request body or a message does not match its schema.'),
  MALFORMED_BODY: spec(400, McpMapping.InvalidParams, false, 'The request body is not valid JSON.'),
  MALFORMED_REQUEST: spec(400, McpMapping.InvalidParams, false, 'The HTTP message itself is malformed or its framing is ambiguous (two Content-Lengths, Transfer-Encoding beside Content-Length, bad chunks, broken header lines, two Hosts); it is refused and the connection closed.'),
  UNAUTHORIZED: spec(401, McpMapping.ToolError, false, 'No valid session, token or credentials.'),
  FORBIDDEN: spec(403, McpMapping.ToolError, false, 'Authenticated, but not allowed to do this.'),
  NOT_FOUND: spec(404, McpMapping.ToolError, false, 'No such route, table or record.'),
  METHOD_NOT_ALLOWED: spec(405, McpMapping.ToolError, false, 'The route exists but not for this HTTP method.'),
  REQUEST_TIMEOUT: spec(408, McpMapping.ToolError, true, 'The request headers or body did not arrive in time (app.headers_timeout_seconds, request_timeout_seconds, body_idle_timeout_seconds); the connection is closed.'),
  CONFLICT: spec(409, McpMapping.ToolError, false, 'The record changed or already exists.'),
  CONFIRMATION_REQUIRED: spec(409, McpMapping.ToolError, false, 'The SQL waits for the user to confirm it before it runs.'),
  PAYLOAD_TOO_LARGE: spec(413, McpMapping.InvalidParams, false, 'The request body is over the size limit.'),
  UNSUPPORTED_MEDIA_TYPE: spec(415, McpMapping.InvalidParams, false, 'The request body is not application/json.'),
  SQL_REJECTED: spec(422, McpMapping.ToolError, false, 'The SQL guard refused the statement; nothing was executed.'),
  DB_QUERY_FAILED: spec(422, McpMapping.ToolError, false, 'The database rejected the SQL (syntax error, unknown column, ...).'),
  LIMIT_EXCEEDED: spec(422, McpMapping.ToolError, false, 'A configured limit (rows, recipients, e-mails per day, file size) was reached.'),
  RESULT_TOO_LARGE: spec(422, McpMapping.ToolError, false, 'The result, or one value in it, is over query.max_result_mb / query.max_value_kb; the read was stopped and nothing returned.'),
  RATE_LIMITED: spec(429, McpMapping.ToolError, true, 'Too many requests in the window; see Retry-After.'),
  INTERNAL: spec(500, McpMapping.InternalError, false, 'An unexpected failure; the request id finds it in the logs.'),
  LLM_BAD_REPLY: spec(502, McpMapping.ToolError, true, 'The model answered, but not in a form Cortado can use.'),
  LLM_UNAVAILABLE: spec(503, McpMapping.ToolError, true, 'No LLM is configured, or the provider failed after retries.'),
  DB_UNAVAILABLE: spec(503, McpMapping.ToolError, true, 'The database cannot be reached.'),
  ACTOR_UNAVAILABLE: spec(503, McpMapping.ToolError, true, 'No actor is running to handle this step.'),
  SHUTTING_DOWN: spec(503, McpMapping.ToolError, true, 'The process is draining and takes no new work.'),
  AUDIT_UNAVAILABLE: spec(503, McpMapping.ToolError, true, 'The audit trail cannot be written (the broker does not keep the event stream, or too many events wait for it): questions are refused rather than answered unaudited (audit.required).'),
  TIMEOUT: spec(504, McpMapping.ToolError, true, 'A step did not answer in time.'),
  DB_TIMEOUT: spec(504, McpMapping.ToolError, true, 'The query ran past its timeout and was cancelled on the server.'),
  CONFIG_INVALID: spec(500, McpMapping.InternalError, false, 'The configuration is invalid, or lacks a setting the operation needs; the message names the setting, never its value. At start-up the process exits with code 2.'),
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, value);
}

/** The wire form of an error: what a bus reply and an HTTP body carry. */
export interface WireError {
  code: ErrorCode;
  message: string;
  retryable: boolean;
  details?: Record<string, unknown>;
}

export class CortadoError extends Error {
  override readonly name = 'CortadoError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.details = details;
  }

  get retryable(): boolean {
    return ERRORS[this.code].retryable;
  }

  get httpStatus(): number {
    return ERRORS[this.code].http;
  }

  toWire(): WireError {
    const wire: WireError = { code: this.code, message: this.message, retryable: this.retryable };
    if (this.details !== undefined) wire.details = this.details;
    return wire;
  }

  static fromWire(wire: WireError): CortadoError {
    const code = isErrorCode(wire.code) ? wire.code : 'INTERNAL';
    return new CortadoError(code, String(wire.message ?? 'error'), wire.details);
  }
}

/**
 * Anything thrown becomes a CortadoError. Unknown failures become INTERNAL with a
 * generic message; the original stays only as `cause`, for the logs.
 */
export function toCortadoError(err: unknown): CortadoError {
  if (err instanceof CortadoError) return err;
  return new CortadoError('INTERNAL', 'internal error', undefined, { cause: err });
}
