/**
 * Traces: W3C `traceparent` from the edge through every bus hop into model and database calls,
 * as OpenTelemetry spans, so one question is one trace. The request id stays what it is; the
 * trace is carried beside it (`traceparent` NATS header, `Ctx.trace`).
 *
 * - Off by default: with no OTLP endpoint (config `tracing.otlp_endpoint`, else the
 *   OTEL_EXPORTER_OTLP_ENDPOINT environment variable) no tracer exists and `startSpan` answers
 *   undefined: no span object is made anywhere. The edge still takes a valid `traceparent` (or
 *   makes one) and passes it on unchanged, so a tracer in front of Cortado and one behind it
 *   (a database proxy, a model gateway) still see one trace id, and the reply echoes it.
 * - On: a tracer provider of our own (never the global one: tests run several stacks in a
 *   process), sampling by `tracing.sample_ratio` for new traces and by the parent's flag for
 *   the rest, batches exported over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`.
 * - Parents are explicit: a span's parent is the `traceparent` of the message that started the
 *   work (no async context tracking, which would cost every promise of the process).
 * - The edge binds its request id to its span's traceparent while a request runs
 *   (`bindRequestTrace`), so the routes' bus requests carry it without each route passing it on.
 */
import { randomFillSync } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';

/** The HTTP and NATS header name (W3C Trace Context). */
export const TRACEPARENT = 'traceparent';

/** Cortado's own span attributes (beside the OpenTelemetry semantic conventions' names). */
export const SpanAttr = {
  RequestId: 'cortado.request_id',
  Task: 'cortado.task',
  Attempts: 'cortado.attempts',
} as const;

export interface TracingOptions {
  /** OTLP/HTTP base URL (`http://collector:4318`); '' = off */
  endpoint: string;
  /** 0..1: the share of new traces recorded */
  sampleRatio: number;
  /** resource `service.instance.id`: which process */
  instance: string;
  /** resource `cortado.roles` */
  roles?: string;
  /** batch delay (tests: short) */
  scheduledDelayMs?: number;
}

interface Active {
  key: string;
  provider: BasicTracerProvider;
  tracer: Tracer;
}

let active: Active | undefined;

/** The OTLP endpoint to use: the configured one, else OTEL_EXPORTER_OTLP_ENDPOINT, else '' (off). */
export function tracingEndpoint(configured: string, env: NodeJS.ProcessEnv = process.env): string {
  return configured.trim() || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim();
}

/** `<base>/v1/traces`, unless the URL names that path already. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * Start (or stop, with an empty endpoint) this process's tracer. Called by every process start;
 * the same settings again keep the running tracer.
 */
export async function configureTracing(opts: TracingOptions): Promise<void> {
  const key = `${opts.endpoint}|${opts.sampleRatio}|${opts.instance}|${opts.roles ?? ''}`;
  if (active?.key === key) return;
  const old = active;
  active = undefined;
  await old?.provider.shutdown().catch(() => undefined);
  if (!opts.endpoint) return;
  const exporter = new OTLPTraceExporter({ url: tracesUrl(opts.endpoint) });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'cortado',
      'service.instance.id': opts.instance,
      ...(opts.roles ? { 'cortado.roles': opts.roles } : {}),
    }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(Math.min(1, Math.max(0, opts.sampleRatio))) }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: opts.scheduledDelayMs ?? 2_000, maxQueueSize: 8_192, maxExportBatchSize: 512 })],
  });
  active = { key, provider, tracer: provider.getTracer('cortado') };
}

export function tracingOn(): boolean {
  return active !== undefined;
}

/** Export what is recorded now (a test, a shutdown). */
export async function flushTracing(): Promise<void> {
  await active?.provider.forceFlush().catch(() => undefined);
}

/** Export what is left and stop the tracer (the process ends). */
export async function shutdownTracing(): Promise<void> {
  const a = active;
  active = undefined;
  await a?.provider.shutdown().catch(() => undefined);
}

// ---- traceparent -----------------------------------------------------------------------------

const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export interface TraceParent {
  traceId: string;
  spanId: string;
  /** bit 0: sampled */
  flags: number;
}

/**
 * A W3C traceparent, or undefined when it is none: version ff, all-zero ids, a version-00
 * header with anything after the flags, upper case hex — all refused as the spec says.
 */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (!header || header.length > 512) return undefined;
  const m = TRACEPARENT_RE.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags] = m as unknown as [string, string, string, string, string];
  if (version === 'ff' || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  if (version === '00' && header.trim().length !== 55) return undefined;
  return { traceId, spanId, flags: parseInt(flags, 16) };
}

export function formatTraceparent(p: TraceParent): string {
  return `00-${p.traceId}-${p.spanId}-${(p.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** random bytes for new ids, drawn in blocks (one getrandom call per POOL_IDS ids, not per id) */
const ID_BYTES = 24;
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let poolAt = pool.length;

/** A new root traceparent (sampled flag set: whoever records it decides). */
export function newTraceparent(): string {
  if (poolAt + ID_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += ID_BYTES;
  return `00-${pool.toString('hex', at, at + 16)}-${pool.toString('hex', at + 16, at + ID_BYTES)}-01`;
}

// ---- the edge's requests ---------------------------------------------------------------------

const byRequest = new Map<string, string>();

/** While an edge request runs, bus requests made with its request id carry this traceparent. */
export function bindRequestTrace(requestId: string, traceparent: string): void {
  byRequest.set(requestId, traceparent);
}

export function unbindRequestTrace(requestId: string, traceparent: string): void {
  if (byRequest.get(requestId) === traceparent) byRequest.delete(requestId);
}

/** The traceparent a message of this context carries: its own, else its edge request's. */
export function traceOf(ctx: { requestId: string; trace?: string | undefined }): string | undefined {
  return ctx.trace ?? (byRequest.size ? byRequest.get(ctx.requestId) : undefined);
}

// ---- spans -----------------------------------------------------------------------------------

export type SpanKindName = 'server' | 'client' | 'consumer' | 'producer' | 'internal';
const KINDS: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER, client: SpanKind.CLIENT, consumer: SpanKind.CONSUMER, producer: SpanKind.PRODUCER, internal: SpanKind.INTERNAL,
};

/** A started span: its traceparent (for the work under it), attributes, and its end. */
export interface SpanHandle {
  readonly traceparent: string;
  set(attrs: Attributes): void;
  rename(name: string): void;
  /** end it; an error code marks it failed */
  end(error?: { code: string; message?: string }): void;
}

/**
 * A span under `parent` (a traceparent; none: a new trace), or undefined when tracing is off.
 * Never put row values, SQL text, prompts or secrets in `attrs`.
 */
export function startSpan(name: string, parent: string | undefined, kind: SpanKindName, attrs?: Attributes): SpanHandle | undefined {
  const a = active;
  if (!a) return undefined;
  const p = parseTraceparent(parent);
  const context = p
    ? trace.setSpanContext(ROOT_CONTEXT, { traceId: p.traceId, spanId: p.spanId, traceFlags: p.flags & TraceFlags.SAMPLED, isRemote: true })
    : ROOT_CONTEXT;
  const span: Span = a.tracer.startSpan(name, { kind: KINDS[kind], ...(attrs ? { attributes: attrs } : {}) }, context);
  const sc = span.spanContext();
  return {
    traceparent: formatTraceparent({ traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags }),
    set: (more) => { span.setAttributes(more); },
    rename: (n) => { span.updateName(n); },
    end: (error) => {
      if (error) {
        span.setAttribute('cortado.error.code', error.code);
        span.setStatus({ code: SpanStatusCode.ERROR, ...(error.message ? { message: error.message.slice(0, 200) } : {}) });
      }
      span.end();
    },
  };
}

/**
 * Run `work` in a span under the context's trace, with the context it should pass on (its
 * `trace` set to this span). Off: `work(ctx)` as it is.
 */
export async function inSpan<C extends { requestId: string; trace?: string }, T>(
  name: string,
  ctx: C,
  kind: SpanKindName,
  attrs: Attributes,
  work: (ctx: C, span: SpanHandle | undefined) => Promise<T>,
): Promise<T> {
  const span = startSpan(name, traceOf(ctx), kind, { 'cortado.request_id': ctx.requestId, ...attrs });
  if (!span) return work(ctx, undefined);
  try {
    const out = await work({ ...ctx, trace: span.traceparent }, span);
    span.end();
    return out;
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    span.end({ code: typeof e?.code === 'string' ? e.code : 'INTERNAL', ...(typeof e?.message === 'string' ? { message: e.message } : {}) });
    throw err;
  }
}
