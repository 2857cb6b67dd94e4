/**
 * What Cortado reserves in JetStream's file storage, fitted to what the server offers.
 *
 * A stream or KV bucket made with a byte limit (`max_bytes`) reserves that much of the server's
 * `max_file_store` up front: JetStream refuses one that does not fit ("insufficient storage
 * resources available", 10047). The event stream alone asked for 1 GiB, so with any
 * `max_file_store` under about 1 GiB it was never kept, and every question was refused
 * (AUDIT_UNAVAILABLE, audit.required) on a server that had room for a smaller stream (issue 31).
 *
 * So a process finds out, once at start (Bus.ensureEventStream), how much the server offers this
 * account: the largest reservation that fits now (tried with a probe stream, made and deleted
 * at once) plus what our own streams already hold. When that is less than the sizes below add
 * up to, each is sized down by the same share (keeping a tenth free for the streams without a
 * limit: sessions, leases, the schedule queue, exports), and a warning says what to change. An
 * event stream that would be smaller than MIN_EVENTS_BYTES is not made at all: the audit trail
 * is then not written (eventTrouble says why, and so does /health).
 *
 * The account info does not say the server's `max_file_store` (its limits read -1 unless an
 * operator set account limits), hence the probe.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from './log.js';
import { Bucket, bucketName, eventsStreamName } from '../protocol/subjects.js';

const MiB = 1024 * 1024;

/** What each stream with a byte limit asks for on a server with room: the event stream, and the buckets that keep user data. */
export const WANTED_BYTES = {
  events: 1024 * MiB,
  [Bucket.Conversations]: 256 * MiB,
  [Bucket.Alerts]: 64 * MiB,
  [Bucket.Insights]: 64 * MiB,
} as const;
type Reserved = keyof typeof WANTED_BYTES;

/** An event stream smaller than this is not worth keeping (it is ~30,000 events: the audit actor empties it as it reads). */
export const MIN_EVENTS_BYTES = 32 * MiB;
/** the share of what is offered that the limited streams take: the rest is for those without a limit */
const SHARE = 0.9;

export interface StoragePlan {
  /** the bytes the server offers this account's limited streams (free + ours); undefined when the probe could not tell */
  offered: number | undefined;
  /** what the limited streams ask for together */
  wanted: number;
  /** 1, or the share each limited stream gets */
  scale: number;
  /** the event stream's max_bytes */
  eventsBytes: number;
  /** set when the event stream cannot be kept with what is offered: why, and what to change */
  short?: string;
}

const plans = new WeakMap<NatsConnection, StoragePlan>();
/** the last thing said about a connection's plan: a plan made again (every retry) says it once */
const said = new WeakMap<NatsConnection, string>();

function sayOnce(nc: NatsConnection, what: string, say: () => void): void {
  if (said.get(nc) === what) return;
  said.set(nc, what);
  say();
}

/** A KV bucket's max_bytes under this connection's plan (undefined: no limit). */
export function reservedBytes(nc: NatsConnection, bucket: Bucket): number | undefined {
  const wanted = (WANTED_BYTES as Record<string, number>)[bucket];
  if (wanted === undefined) return undefined;
  const scale = plans.get(nc)?.scale ?? 1;
  // no floor of a whole MB: on a tiny server every limited bucket taking 1 MB would leave nothing for the rest
  return Math.max(64 * 1024, Math.floor(wanted * scale));
}

const mb = (n: number): string => `${Math.round(n / MiB)} MB`;

/** The names of our limited streams (a KV bucket is the stream KV_<name>). */
function ourStreams(prefix: string): Map<string, Reserved> {
  const m = new Map<string, Reserved>([[eventsStreamName(prefix), 'events']]);
  for (const k of Object.keys(WANTED_BYTES)) if (k !== 'events') m.set(`KV_${bucketName(prefix, k as Bucket)}`, k as Reserved);
  return m;
}

/** Whether JetStream lets a stream reserve `bytes` now (made and deleted at once). */
async function fits(jsm: JetStreamManager, name: string, subject: string, bytes: number, replicas: number): Promise<boolean> {
  try {
    await jsm.streams.add({ name, subjects: [subject], retention: RetentionPolicy.Limits, storage: StorageType.File, num_replicas: replicas, max_bytes: bytes, max_msgs: 1 });
  } catch (err) {
    if ((err as { code?: unknown }).code === 10047 || /insufficient storage/i.test((err as Error).message)) return false;
    throw err;
  }
  await jsm.streams.delete(name).catch(() => undefined);
  return true;
}

/**
 * Find what the server offers and size the limited streams to it; remembered for this
 * connection (reservedBytes). Logs once what was sized down and what to change.
 */
export async function planStorage(nc: NatsConnection, prefix: string, replicas: number, log: Logger): Promise<StoragePlan> {
  const wanted = Object.values(WANTED_BYTES).reduce((a, b) => a + b, 0);
  let plan: StoragePlan = { offered: undefined, wanted, scale: 1, eventsBytes: WANTED_BYTES.events };
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2_000 });
    const ours = ourStreams(prefix);
    let held = 0;
    const have = new Set<Reserved>();
    for await (const si of jsm.streams.list()) {
      const which = ours.get(si.config.name);
      if (which === undefined) continue;
      have.add(which);
      if (si.config.max_bytes > 0) held += si.config.max_bytes;
    }
    // what is still to be made must fit in what is free now
    const toMake = [...ours.values()].filter((k) => !have.has(k)).reduce((a, k) => a + WANTED_BYTES[k], 0);
    if (toMake === 0) return remember(nc, plan);
    const probe = `${eventsStreamName(prefix)}_STORAGE_PROBE`;
    const subject = `${prefix}._storage_probe`;
    let free: number;
    if (await fits(jsm, probe, subject, toMake, replicas)) {
      free = toMake;
    } else {
      // the largest reservation that fits, to within 1 MB
      let lo = 0;
      let hi = toMake;
      while (hi - lo > MiB) {
        const mid = Math.floor((lo + hi) / 2);
        if (await fits(jsm, probe, subject, mid, replicas)) lo = mid;
        else hi = mid;
      }
      free = lo;
    }
    const offered = free + held;
    plan = { ...plan, offered };
    if (free >= toMake) return remember(nc, plan);
    const scale = Math.min(1, (offered * SHARE) / wanted);
    const eventsBytes = Math.floor(WANTED_BYTES.events * scale);
    const more = `give JetStream at least ${mb(wanted / SHARE - offered)} more file storage (jetstream { max_file_store } in the nats-server's config; this account has ${mb(offered)})`;
    if (eventsBytes < MIN_EVENTS_BYTES) {
      plan = { ...plan, scale, eventsBytes, short: `insufficient storage: JetStream offers ${mb(offered)} of file storage, and the event stream needs at least ${mb(MIN_EVENTS_BYTES / (WANTED_BYTES.events / wanted) / SHARE)} with the other streams; ${more}` };
      sayOnce(nc, plan.short!, () => log.error({ offered, wanted }, `JetStream has too little file storage for the event stream: the audit trail cannot be written; ${more}`));
      return remember(nc, plan);
    }
    plan = { ...plan, scale, eventsBytes };
    sayOnce(nc, `scaled ${eventsBytes}`, () => log.warn(
      { offered, wanted, scale: Math.round(scale * 100) / 100, events_max_bytes: eventsBytes },
      `JetStream offers ${mb(offered)} of file storage, Cortado's streams ask for ${mb(wanted)} (events ${mb(WANTED_BYTES.events)}, conversations, alerts, insights): ` +
        `each is made ${Math.round(scale * 100)} % of its size (the event stream ${mb(eventsBytes)}); to keep the full sizes, ${more}`,
    ));
  } catch (err) {
    // JetStream off, or not answering: the stream's own attempt says so (bus-durable.ts)
    log.debug({ err }, 'cannot tell how much storage JetStream offers');
  }
  return remember(nc, plan);
}

function remember(nc: NatsConnection, plan: StoragePlan): StoragePlan {
  plans.set(nc, plan);
  return plan;
}
