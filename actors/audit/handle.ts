/**
 * The audit log: every event of the CORTADO_EVENTS stream written once (the audit repository,
 * store/audit.ts, keeps one entry per event id, so a redelivery after a crash is harmless),
 * and queries over it.
 */
import { createHash } from 'node:crypto';
import type { AuditQueryRequest } from '../../protocol/schemas/identity.js';
import { parseTraceparent } from '../../runtime/tracing.js';
import type { AuditEntry, Storage } from '../../store/index.js';

const EVENTS_TOKEN = 'evt.';

/**
 * One event → one audit entry. Events carry no row values by contract; the payload is kept whole.
 * `traceparent`: the W3C header the event was published under; its trace id is kept so the admin
 * panel's audit detail can name the trace of the question.
 */
export function toEntry(subject: string, data: unknown, traceparent?: string): AuditEntry {
  const payload = (data !== null && typeof data === 'object' && !Array.isArray(data) ? data : { value: data }) as Record<string, unknown>;
  const str = (k: string) => (typeof payload[k] === 'string' && payload[k] !== '' ? (payload[k] as string) : undefined);
  const type = subject.startsWith(EVENTS_TOKEN) ? subject.slice(EVENTS_TOKEN.length) : subject;
  // an event without an id still gets a stable one, so its redelivery is recognised
  const id = str('id') ?? createHash('sha256').update(`${subject}\n${JSON.stringify(payload)}`).digest('hex');
  let code = str('code');
  // a question that ran, and one answered, say no code: they succeeded
  if (!code && (type === 'query.executed' || type === 'question.completed')) code = 'OK';
  if (!code && typeof payload.ok === 'boolean') code = payload.ok ? 'OK' : 'FAILED';
  const entry: AuditEntry = { event_id: id, type, ts: str('ts') ?? new Date().toISOString(), payload };
  const rid = str('request_id');
  const user = str('user');
  const channel = str('channel');
  if (rid) entry.request_id = rid;
  if (user) entry.user = user;
  if (channel) entry.channel = channel;
  if (code) entry.code = code;
  const trace = parseTraceparent(traceparent);
  if (trace) entry.trace_id = trace.traceId;
  return entry;
}

export async function record(store: Pick<Storage, 'audit'>, subject: string, data: unknown, traceparent?: string): Promise<boolean> {
  return store.audit.append(toEntry(subject, data, traceparent));
}

export async function query(input: AuditQueryRequest, store: Pick<Storage, 'audit'>) {
  return store.audit.query({ limit: 50, ...input });
}
