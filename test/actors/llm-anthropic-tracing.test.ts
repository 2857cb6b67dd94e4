/**
 * The Anthropic SDK's own OpenTelemetry spans are off: Cortado's model-call span is its own
 * (actors/llm/observe.ts on runtime/tracing.ts's private provider), and the SDK's, taken from the
 * global tracer, could only ever be no-ops made and checked on every call. Even with a global
 * tracer provider and propagator registered (by anything else in the process), a model call makes
 * no SDK span and sends no `traceparent` of the SDK's.
 */
import t from 'tap';
import { propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createLogger } from '../../runtime/log.js';
import { complete, type LlmDeps } from '../../actors/llm/handle.js';
import { startFakeLlm } from '../helpers/fake-llm.js';
import { testConfig } from '../helpers/config.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
t.ok(trace.setGlobalTracerProvider(provider), 'a global tracer provider is registered');
t.ok(propagation.setGlobalPropagator(new W3CTraceContextPropagator()), 'a global propagator is registered');
t.teardown(async () => {
  trace.disable();
  propagation.disable();
  await provider.shutdown();
});

const fake = await startFakeLlm();
t.teardown(() => fake.close());

t.test('a model call through the Anthropic SDK makes no SDK span and sends no traceparent', async (t) => {
  // the global provider works: a span made through it is recorded
  trace.getTracer('check').startSpan('probe').end();
  t.equal(exporter.getFinishedSpans().length, 1, 'the global provider records spans');
  exporter.reset();

  fake.script({ text: 'hello' });
  const config = testConfig({ natsUrl: 'nats://127.0.0.1:1', llmUrl: fake.url });
  const deps: LlmDeps = { config, log: createLogger({ svc: 'test', level: 'silent' }), providers: new Map(), policy: { baseBackoffMs: 20 } };
  const reply = await complete({ task: 'sql', system: 'S', messages: [{ role: 'user', content: 'q?' }] }, deps, { requestId: 'r-otel' });
  t.equal(reply.text, 'hello', 'the call is answered');
  t.equal(fake.requests.length, 1);
  t.equal(fake.requests[0]!.headers.traceparent, undefined, 'no traceparent from the SDK');
  t.same(exporter.getFinishedSpans().map((s) => s.name), [], 'no span from the SDK');
});
