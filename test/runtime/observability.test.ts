/**
 * The pieces behind /metrics and traces that need no server: the label guard that bounds a
 * series' cardinality, the exposition staying valid when values fold into `other`, and the W3C
 * traceparent rules (what is refused, what a new one looks like).
 */
import t from 'tap';
import { busSeries, LabelGuard, metricsText, OTHER, setMetricsEnabled } from '../../runtime/metrics.js';
import { formatTraceparent, newTraceparent, parseTraceparent, startSpan, tracesUrl, tracingEndpoint } from '../../runtime/tracing.js';

t.test('a label holds at most its bound of values; the rest count as other', async (t) => {
  const g = new LabelGuard(3);
  t.same(['a', 'b', 'c', 'd', 'e', 'a'].map((v) => g.value(v)), ['a', 'b', 'c', OTHER, OTHER, 'a']);
});

t.test('subjects past the bound fold into one `other` series, never a duplicate line', async (t) => {
  setMetricsEnabled(true);
  for (let i = 0; i < 260; i++) {
    const s = busSeries(`made.up.${i}`, 'client')!;
    s.enter();
    s.leave(1, i % 2 ? 'TIMEOUT' : undefined);
  }
  const { text } = await metricsText();
  const lines = text.split('\n').filter((l) => l.startsWith('cortado_bus_request_duration_seconds_count{'));
  t.equal(new Set(lines.map((l) => l.split(' ')[0])).size, lines.length, 'every series once');
  const other = lines.find((l) => l.includes(`subject="${OTHER}"`));
  t.ok(other, 'an other series');
  const distinct = lines.filter((l) => l.includes('made.up.')).length;
  t.ok(distinct <= 200, `at most 200 subjects named (${distinct})`);
  t.equal(Number(other!.split(' ')[1]) + distinct, 260, 'nothing lost');
  t.match(text, /cortado_bus_in_flight\{subject="other",side="client"\} 0/);
});

t.test('traceparent: valid ones parse, the spec\'s invalid ones do not', async (t) => {
  const ok = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  t.same(parseTraceparent(ok), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', flags: 1 });
  t.equal(formatTraceparent(parseTraceparent(ok)!), ok);
  for (const bad of [
    '', 'nonsense', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', // too short
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // zero trace id
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // zero span id
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // upper case
    `${ok}-extra`, // version 00 has nothing after the flags
  ]) t.equal(parseTraceparent(bad), undefined, JSON.stringify(bad));
  t.ok(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future'), 'a later version may add fields');
  const fresh = new Set(Array.from({ length: 600 }, () => newTraceparent()));
  t.equal(fresh.size, 600, 'new ones differ');
  t.ok([...fresh].every((p) => parseTraceparent(p)?.flags === 1));
});

t.test('tracing is off without an endpoint: no span at all', async (t) => {
  t.equal(startSpan('x', newTraceparent(), 'server'), undefined);
  t.equal(tracingEndpoint('', {}), '');
  t.equal(tracingEndpoint('', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), 'http://c:4318');
  t.equal(tracingEndpoint('http://mine:4318', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), 'http://mine:4318');
  t.equal(tracesUrl('http://c:4318/'), 'http://c:4318/v1/traces');
  t.equal(tracesUrl('http://c:4318/v1/traces'), 'http://c:4318/v1/traces');
});
