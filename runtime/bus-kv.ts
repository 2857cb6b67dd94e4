/**
 * JetStream KV behind the typed key-value API of runtime/kv.ts: the only place that sees NATS
 * KV entries, their operations (PUT, DEL, PURGE) and revisions. A bucket is opened (made when
 * missing) by `openBucket` (`Bus.bucket`); its name comes from protocol/subjects.ts.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { BusConnection } from './bus-connection.js';
import { Kvm, KvWatchInclude, type KV, type KvEntry as NatsEntry } from '@nats-io/kv';
import { Kv, type KvBackend, type KvEntry } from './kv.js';
import { reservedBytes } from './bus-storage.js';
import { bucketName, type Bucket } from '../protocol/subjects.js';

export interface BucketOptions {
  /** how long a key lives after its last write */
  ttlMs?: number;
  history?: number;
  /** the bucket's bytes at most; the limited buckets' sizes are in runtime/bus-storage.ts */
  maxBytes?: number;
  /** copies JetStream keeps (the bus passes config bus.replicas) */
  replicas?: number;
}

/** JetStream's answers when a compare-and-set lost the race (the key changed since it was read). */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

function lostRace(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (typeof code === 'number' && WRONG_LAST_SEQUENCE.has(code)) || /wrong last sequence/i.test(String((err as Error | null)?.message));
}

async function openNatsKv(nc: NatsConnection, name: string, opts: BucketOptions = {}): Promise<KV> {
  return new Kvm(nc).create(name, {
    ...(opts.ttlMs !== undefined ? { ttl: opts.ttlMs } : {}),
    history: opts.history ?? 1,
    replicas: opts.replicas ?? 1,
    ...(opts.maxBytes !== undefined ? { max_bytes: opts.maxBytes } : {}),
  });
}

/** A typed bucket on the bus's connection, `<prefix>_<bucket>`, made when missing. */
export async function openBucket<T>(conn: BusConnection, bucket: Bucket, opts: BucketOptions = {}): Promise<Kv<T>> {
  // a bucket that keeps user data has a byte limit, fitted to what the server offers (runtime/bus-storage.ts)
  const maxBytes = opts.maxBytes ?? reservedBytes(conn.nc, bucket);
  return new Kv<T>(new NatsBackend(await openNatsKv(conn.nc, bucketName(conn.prefix, bucket), { replicas: conn.replicas, ...(maxBytes !== undefined ? { maxBytes } : {}), ...opts })));
}

function live(e: NatsEntry | null): e is NatsEntry {
  return e !== null && e.operation === 'PUT' && e.value.length > 0;
}

class NatsBackend implements KvBackend {
  constructor(private readonly kv: KV) {}

  async get(key: string): Promise<KvEntry | undefined> {
    const e = await this.kv.get(key);
    return live(e) ? { value: e.string(), revision: e.revision } : undefined;
  }
  async put(key: string, value: string): Promise<void> {
    await this.kv.put(key, value);
  }
  async create(key: string, value: string): Promise<boolean> {
    try {
      await this.kv.create(key, value);
      return true;
    } catch (err) {
      if (lostRace(err)) return false;
      throw err;
    }
  }
  async replace(key: string, value: string, revision: number): Promise<boolean> {
    try {
      await this.kv.update(key, value, revision);
      return true;
    } catch (err) {
      if (lostRace(err)) return false;
      throw err;
    }
  }
  async delete(key: string): Promise<void> {
    await this.kv.delete(key);
  }
  async remove(key: string, revision: number): Promise<boolean> {
    try {
      await this.kv.delete(key, { previousSeq: revision });
      return true;
    } catch (err) {
      if (lostRace(err)) return false;
      throw err;
    }
  }
  async ttlMs(): Promise<number> {
    return (await this.kv.status()).ttl;
  }
  async keys(): Promise<string[]> {
    const out: string[] = [];
    for await (const k of await this.kv.keys()) out.push(k);
    return out;
  }
  async watch(onChange: (key: string, value: string | undefined) => void): Promise<() => void> {
    const it = await this.kv.watch({ include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const e of it) {
        try {
          onChange(e.key, live(e) ? e.string() : undefined);
        } catch {
          // a watcher's throw is its own: the watch goes on
        }
      }
    })().catch(() => undefined);
    return () => { it.stop(); };
  }
}
