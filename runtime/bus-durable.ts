/**
 * Durable events, the bus's part that talks to JetStream for them: the event stream (made at
 * start, made again when it vanishes, tried again every STREAM_RETRY_MS while JetStream cannot
 * keep it), the outbox (runtime/outbox.ts) and the acknowledgements that empty it. Only
 * runtime/bus.ts uses it; together they are the only importers of the NATS client.
 *
 * A durable event goes out as a JetStream publish: a plain publish with a reply subject (one
 * wildcard subscription of ours takes every acknowledgement) and its id as `Nats-Msg-Id`, so
 * JetStream stores a copy sent twice once (duplicate window: two minutes). Nothing waits for the
 * acknowledgement; the outbox keeps the event until it comes.
 */
import { randomUUID } from 'node:crypto';
import type { Msg, MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from './log.js';
import { Outbox, type OutboxItem } from './outbox.js';
import { WANTED_BYTES, type StoragePlan } from './bus-storage.js';
import { eventsStreamName, EVENTS_WILDCARD } from '../protocol/subjects.js';

/** the default of bus.outbox_max_events */
export const OUTBOX_MAX_EVENTS = 10_000;
/** while JetStream does not keep the event stream, how often making it is tried again */
const STREAM_RETRY_MS = 5_000;
/** how long the stream keeps a message id to drop a second copy by */
const DUPLICATE_WINDOW_S = 120;

export interface StreamOptions {
  maxAgeMs?: number;
  /** the stream's max_bytes; else what the storage plan gives it */
  maxBytes?: number;
  /** what the server offers, asked before the stream is made (runtime/bus-storage.ts) */
  plan?: () => Promise<StoragePlan>;
  /** copies JetStream keeps of the stream (config bus.replicas) */
  replicas?: number;
}

/** A durable event, encoded, waiting in the outbox. */
interface OutgoingEvent extends OutboxItem {
  data: Uint8Array;
  headers: MsgHdrs;
}

export interface OutboxStats {
  waiting: number;
  max: number;
  oldestMs: number;
  added: number;
  stored: number;
  resent: number;
  dropped: number;
  refused: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const PUB_ACK_START = enc.encode('{"stream":');

export class DurableEvents {
  private readonly nc: NatsConnection;
  private readonly prefix: string;
  private readonly log: Logger;
  private readonly max: number;
  /** queue a write with the bus's others of this turn (see Bus.send) */
  private readonly send: (write: () => void) => void;
  /** whether the bus's connection is lost now */
  private readonly down: () => boolean;
  private readonly ackInbox = `_INBOX.${randomUUID().replace(/-/g, '')}`;
  private outbox: Outbox<OutgoingEvent> | undefined;
  /** whether JetStream keeps the event stream: unchecked until ensureStream() */
  private state: { kind: 'unchecked' | 'kept' } | { kind: 'not_kept'; why: string } = { kind: 'unchecked' };
  private streamOpts: StreamOptions = {};
  private retry: NodeJS.Timeout | undefined;
  private remade = 0;
  private closed = false;

  constructor(opts: { nc: NatsConnection; prefix: string; log: Logger; max?: number; send: (write: () => void) => void; down: () => boolean }) {
    this.nc = opts.nc;
    this.prefix = opts.prefix;
    this.log = opts.log;
    this.max = opts.max ?? OUTBOX_MAX_EVENTS;
    this.send = opts.send;
    this.down = opts.down;
  }

  /** durable events go through the outbox (the stream was kept once) */
  get active(): boolean {
    return this.outbox !== undefined;
  }

  /** Keep the event until JetStream has stored it. False when the outbox had to drop it. */
  add(event: OutgoingEvent): boolean {
    return this.outbox?.add(event) ?? false;
  }

  /** See Bus.eventTrouble. */
  trouble(): CortadoError | undefined {
    if (this.state.kind === 'not_kept') {
      return new CortadoError('AUDIT_UNAVAILABLE', `questions are refused: the audit trail cannot be written, the message broker does not keep the event stream (${this.state.why})`, { reason: 'stream_not_kept' });
    }
    if (this.outbox?.full) {
      return new CortadoError('AUDIT_UNAVAILABLE', `questions are refused for now: ${this.outbox.size} events wait for the message broker to store them in the audit trail`, { reason: 'outbox_full' });
    }
    return undefined;
  }

  stats(): OutboxStats {
    const o = this.outbox;
    return { waiting: o?.size ?? 0, max: this.max, oldestMs: o?.oldestMs() ?? 0, ...(o?.counts ?? { added: 0, stored: 0, resent: 0, dropped: 0, refused: 0 }) };
  }

  get waiting(): number {
    return this.outbox?.size ?? 0;
  }

  /** The connection is lost: send nothing until `resume`. */
  pause(): void {
    this.outbox?.pause();
  }

  /** The connection is back: what waits goes again. */
  resume(): void {
    this.outbox?.resume();
  }

  /** Resolves when nothing waits, or at the deadline. */
  settled(deadline: number): Promise<void> {
    return this.outbox?.settled(deadline) ?? Promise.resolve();
  }

  /**
   * Shutdown: what waits gets until `deadline`; what is left then is logged at error level, by
   * event id (it lived in this process's memory only: the audit trail misses it).
   */
  async close(deadline: number): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (!this.outbox) return;
    await this.outbox.settled(deadline);
    const left = this.outbox.stop();
    if (left.length) {
      this.log.error(
        { lost: left.length, events: left.slice(0, 100).map((e) => ({ id: e.id, subj: e.subject, rid: e.requestId })) },
        'stopped with events JetStream never stored: the audit trail misses them',
      );
    }
  }

  /** See Bus.ensureEventStream. */
  async ensureStream(opts: StreamOptions): Promise<boolean> {
    this.streamOpts = opts;
    const why = await this.makeStream();
    if (why === undefined) {
      this.keep();
      return true;
    }
    if (this.state.kind !== 'kept') {
      this.state = { kind: 'not_kept', why };
      this.log.warn({ err: why, stream: eventsStreamName(this.prefix) }, 'JetStream does not keep the event stream: events are not kept (trying again)');
      this.retryStream();
    }
    return false;
  }

  /** The stream is kept: durable events go through the outbox from now on. */
  private keep(): void {
    const was = this.state.kind;
    this.state = { kind: 'kept' };
    if (was === 'not_kept') this.log.info({ stream: eventsStreamName(this.prefix) }, 'JetStream keeps the event stream now');
    if (this.outbox) return;
    this.outbox = new Outbox<OutgoingEvent>({
      max: this.max,
      log: this.log,
      send: (e, key) => {
        this.send(() => {
          if (this.down()) return; // the outbox sends it again once the connection is back
          try {
            this.nc.publish(`${this.prefix}.${e.subject}`, e.data, { headers: e.headers, reply: `${this.ackInbox}.${key}` });
          } catch {
            // closed: the outbox's shutdown accounting says what was lost
          }
        });
      },
    });
    if (this.down()) this.outbox.pause();
    this.nc.subscribe(`${this.ackInbox}.*`, { callback: (err, msg) => { if (!err) this.onAck(msg); } });
  }

  private retryStream(): void {
    if (this.retry || this.closed) return;
    const again = (): void => {
      this.retry = setTimeout(() => {
        void this.makeStream().then((why) => {
          this.retry = undefined;
          if (this.closed) return;
          if (why === undefined) {
            this.keep();
            return;
          }
          if (this.state.kind === 'not_kept') this.state = { kind: 'not_kept', why };
          again();
        });
      }, STREAM_RETRY_MS * (0.75 + Math.random() * 0.5));
      this.retry.unref();
    };
    again();
  }

  /** What JetStream said to a durable event: stored, not now, or never. */
  private onAck(msg: Msg): void {
    const outbox = this.outbox;
    if (!outbox) return;
    const key = msg.subject.slice(this.ackInbox.length + 1);
    if (msg.headers?.code === 503 && msg.data.length === 0) {
      // no responders: JetStream is starting, or the stream is gone (then it is made again)
      outbox.settle(key, 'retry', 'no stream answers');
      this.remake();
      return;
    }
    // the common answer, `{"stream":"…","seq":…}` (an error starts `{"error"`), without parsing it
    if (startsWith(msg.data, PUB_ACK_START)) {
      outbox.settle(key, 'stored');
      return;
    }
    let ack: { stream?: string; error?: { code?: number; description?: string } };
    try {
      ack = JSON.parse(dec.decode(msg.data)) as typeof ack;
    } catch {
      outbox.settle(key, 'retry', 'an unreadable acknowledgement');
      return;
    }
    if (ack.error) {
      const code = ack.error.code ?? 0;
      const why = ack.error.description ?? `error ${code}`;
      // 4xx is about the message itself (too large, …): sending it again would not help
      const final = code >= 400 && code < 500 && code !== 404 && code !== 408;
      outbox.settle(key, final ? 'refused' : 'retry', why);
      if (code === 404) this.remake();
      return;
    }
    outbox.settle(key, ack.stream ? 'stored' : 'retry', 'an acknowledgement without a stream');
  }

  /** The stream seems gone (a server restarted without its store): make it again, now and then. */
  private remake(): void {
    if (this.closed || Date.now() - this.remade < STREAM_RETRY_MS) return;
    this.remade = Date.now();
    void this.makeStream().then((why) => {
      if (why !== undefined) this.log.debug({ err: why }, 'cannot make the event stream again yet');
    });
  }

  /** Make the stream if it is missing; the reason when it cannot be had, undefined when it is there. */
  private async makeStream(): Promise<string | undefined> {
    const name = eventsStreamName(this.prefix);
    const opts = this.streamOpts;
    try {
      const jsm = await jetstreamManager(this.nc, { timeout: 2_000 });
      try {
        await jsm.streams.info(name);
      } catch {
        const plan = opts.plan ? await opts.plan() : undefined;
        if (plan?.short !== undefined) return plan.short;
        await jsm.streams.add({
          name,
          subjects: [`${this.prefix}.${EVENTS_WILDCARD}`],
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          num_replicas: opts.replicas ?? 1,
          discard: DiscardPolicy.Old,
          max_age: (opts.maxAgeMs ?? 7 * 24 * 3600_000) * 1_000_000,
          max_bytes: opts.maxBytes ?? plan?.eventsBytes ?? WANTED_BYTES.events,
          duplicate_window: DUPLICATE_WINDOW_S * 1_000_000_000,
        });
        this.log.info({ stream: name, max_bytes: opts.maxBytes ?? plan?.eventsBytes ?? WANTED_BYTES.events }, 'created the event stream');
      }
      return undefined;
    } catch (err) {
      return (err as Error).message || String(err);
    }
  }
}

function startsWith(data: Uint8Array, prefix: Uint8Array): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}
