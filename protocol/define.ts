/**
 * Typed definitions of bus messages. Both sides import the same constant, so the payload
 * and reply types are inferred, and the schema is compiled once, at load.
 */
import type { Static, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';

/** A subject relative to the configured prefix: lowercase dotted tokens, no wildcards. */
const TOKEN = /^[a-z0-9][a-z0-9_-]*$/;

export function assertSubject(subject: string): void {
  const tokens = subject.split('.');
  if (tokens.length === 0 || tokens.some((t) => !TOKEN.test(t))) {
    throw new Error(`invalid subject "${subject}": lowercase tokens [a-z0-9_-] separated by dots`);
  }
}

export interface RequestDef<Q extends TSchema = TSchema, R extends TSchema = TSchema> {
  readonly kind: 'request';
  /** subject relative to the prefix, e.g. `sql.execute` */
  readonly subject: string;
  /** the owning actor: also the queue group */
  readonly owner: string;
  readonly timeoutMs: number;
  readonly request: Q;
  readonly reply: R;
  readonly checkRequest: Validator;
  readonly checkReply: Validator;
}

export interface EventDef<P extends TSchema = TSchema, S extends string = string> {
  readonly kind: 'event';
  /** subject relative to the prefix, e.g. `evt.query.executed` */
  readonly subject: S;
  readonly payload: P;
  readonly checkPayload: Validator;
  /**
   * must not be lost: published to JetStream with an acknowledgement and its id as
   * `Nats-Msg-Id`, waiting in the bus's outbox until the stream has stored it (runtime/outbox.ts)
   */
  readonly durable: boolean;
}

export type RequestOf<D> = D extends RequestDef<infer Q, TSchema> ? Static<Q> : never;
export type ReplyOf<D> = D extends RequestDef<TSchema, infer R> ? Static<R> : never;
export type PayloadOf<D> = D extends EventDef<infer P, string> ? Static<P> : never;
/** What `bus.consume` hands over for one of its definitions: narrow it by `subject`. */
export type EventOf<D> = D extends EventDef<infer P, infer S> ? { subject: S; payload: Static<P> } : never;

export function defineRequest<Q extends TSchema, R extends TSchema>(def: {
  subject: string;
  owner: string;
  timeoutMs: number;
  request: Q;
  reply: R;
}): RequestDef<Q, R> {
  assertSubject(def.subject);
  if (def.subject.startsWith('evt.')) throw new Error(`request subject "${def.subject}" must not start with evt.`);
  return Object.freeze({
    kind: 'request' as const,
    ...def,
    checkRequest: Compile(def.request),
    checkReply: Compile(def.reply),
  });
}

/** `durable: true` for a fact the audit trail must have (see EventDef.durable); the payload then needs an `id`. */
export function defineEvent<P extends TSchema, const S extends string>(def: { subject: S; payload: P; durable?: boolean }): EventDef<P, S> {
  assertSubject(def.subject);
  if (!def.subject.startsWith('evt.')) throw new Error(`event subject "${def.subject}" must start with evt.`);
  // the id is the message id JetStream drops a retried copy by, and the audit entry's key
  const schema = def.payload as { properties?: Record<string, { type?: unknown }>; required?: string[] };
  if (def.durable && (schema.properties?.id?.type !== 'string' || !schema.required?.includes('id'))) {
    throw new Error(`durable event "${def.subject}" needs a required string id in its payload`);
  }
  return Object.freeze({ kind: 'event' as const, ...def, durable: def.durable ?? false, checkPayload: Compile(def.payload) });
}

/** `{instancePath, message}` items for a failed check: what VALIDATION_FAILED carries. */
export function describeErrors(validator: Validator, value: unknown, max = 5): Array<{ path: string; message: string }> {
  return validator
    .Errors(value)
    .slice(0, max)
    .map((e) => ({ path: e.instancePath || '/', message: e.message }));
}
