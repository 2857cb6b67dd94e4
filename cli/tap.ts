/** `cortado tap`: the live event flow, one line per event, for an operator. */
import { Bus } from '../runtime/bus.js';
import { createLogger } from '../runtime/log.js';
import { EVENTS_WILDCARD } from '../protocol/subjects.js';
import type { Config } from '../config/schema.js';

export async function runTap(config: Config, json: boolean): Promise<number> {
  const log = createLogger({ svc: 'tap', level: 'warn' });
  let bus: Bus;
  try {
    bus = await Bus.connect({ url: config.bus.url, prefix: config.bus.prefix, name: `cortado-tap-${process.pid}`, log });
  } catch (err) {
    process.stderr.write(`cortado tap: cannot reach NATS at ${config.bus.url}: ${(err as Error).message}\n`);
    return 1;
  }
  process.stderr.write(`cortado tap: watching ${config.bus.prefix}.${EVENTS_WILDCARD} on ${config.bus.url} (Ctrl-C to stop)\n`);
  bus.listen(EVENTS_WILDCARD, (data, subject) => {
    process.stdout.write(`${json ? JSON.stringify({ subject, event: data }) : formatEvent(subject, data)}\n`);
  });
  return new Promise<number>((resolve) => {
    const stop = (): void => { void bus.close().then(() => resolve(0)); };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** `12:00:01.123 query.executed rid=… rows=12 ms=3.2 sql="SELECT …"` */
export function formatEvent(subject: string, data: unknown): string {
  const e = (data ?? {}) as Record<string, unknown>;
  const time = typeof e.ts === 'string' ? e.ts.slice(11, 23) : new Date().toISOString().slice(11, 23);
  const parts = [time, subject.replace(/^evt\./, '')];
  if (e.request_id) parts.push(`rid=${String(e.request_id)}`);
  if (e.user) parts.push(`user=${String(e.user)}`);
  if (e.channel) parts.push(`via=${String(e.channel)}`);
  for (const k of ['code', 'row_count', 'duration_ms', 'attempt']) if (e[k] !== undefined) parts.push(`${k}=${String(e[k])}`);
  const usage = e.usage as { input_tokens?: number; output_tokens?: number } | undefined;
  if (usage && (usage.input_tokens || usage.output_tokens)) parts.push(`tokens=${usage.input_tokens ?? 0}+${usage.output_tokens ?? 0}`);
  if (typeof e.reason === 'string') parts.push(`reason=${JSON.stringify(e.reason)}`);
  if (typeof e.message === 'string') parts.push(`message=${JSON.stringify(e.message)}`);
  if (typeof e.sql === 'string') parts.push(`sql=${JSON.stringify(e.sql.replace(/\s+/g, ' ').slice(0, 160))}`);
  return parts.join(' ');
}
