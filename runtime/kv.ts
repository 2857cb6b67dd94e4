/**
 * A small typed key-value store: the one home of compare-and-set. Values are JSON; a key is
 * either there (a value) or not (`undefined`: never written, deleted, or expired with the
 * bucket's TTL). Two backends behave the same (one shared suite, test/runtime/kv.test.ts):
 *
 * - JetStream KV (runtime/bus-kv.ts, opened with `bus.bucket(def)`): shared by every process;
 * - `memoryKv()`: this process only, for tests and a single process without JetStream.
 *
 * Nothing outside protocol/ sees NATS KV entries, revisions or operations: `update(key, fn)`
 * reads, computes and writes by compare-and-set, trying again when another writer got in
 * between, and `increment(key, max)` is the counter the mailer, the alerts and the lockouts
 * share.
 */
import { CortadoError } from '../protocol/errors.js';

/** What a backend keeps: the encoded value and its revision (compare-and-set). */
export interface KvEntry {
  value: string;
  revision: number;
}

/** The primitives a backend gives; everything else is written once, here. */
export interface KvBackend {
  get(key: string): Promise<KvEntry | undefined>;
  put(key: string, value: string): Promise<void>;
  /** false: the key is there already */
  create(key: string, value: string): Promise<boolean>;
  /** false: the key changed since `revision` (another writer got in between) */
  replace(key: string, value: string, revision: number): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** delete only if unchanged since `revision`; false when another writer got in between */
  remove(key: string, revision: number): Promise<boolean>;
  /** the keys there now */
  keys(): Promise<string[]>;
  /** how long a key lives after its last write (the bucket's, which its maker chose); 0: forever */
  ttlMs(): Promise<number>;
  /** every change from now on (undefined: deleted or expired); the unsubscribe */
  watch(onChange: (key: string, value: string | undefined) => void): Promise<() => void>;
}

/** compare-and-set tries before `update` gives up (unless told otherwise) */
const CAS_TRIES = 40;

/** `update` lost the race CAS_TRIES times: the key keeps changing under it. */
export class KvContention extends CortadoError {
  constructor(key: string, tries: number) {
    super('INTERNAL', `the shared value "${key}" keeps changing: gave up after ${tries} tries`);
  }
}

export class Kv<T> {
  constructor(private readonly backend: KvBackend) {}

  /** The same bucket, read as another type (one bucket holding several kinds of key). */
  as<U>(): Kv<U> {
    return new Kv<U>(this.backend);
  }

  async get(key: string): Promise<T | undefined> {
    const e = await this.backend.get(key);
    return e ? decode<T>(e.value) : undefined;
  }

  async put(key: string, value: T): Promise<void> {
    await this.backend.put(key, JSON.stringify(value));
  }

  /** Write only if the key is not there; false when it is. */
  async create(key: string, value: T): Promise<boolean> {
    return this.backend.create(key, JSON.stringify(value));
  }

  async delete(key: string): Promise<void> {
    await this.backend.delete(key);
  }

  /**
   * Read and delete by compare-and-set, if `accept(value)` says so: the value when this caller
   * removed it, undefined when absent, refused, or taken by another caller in between (a
   * one-time ticket: only one of any number of callers gets it).
   */
  async take(key: string, accept: (value: T) => boolean = () => true): Promise<T | undefined> {
    const e = await this.backend.get(key);
    const value = e ? decode<T>(e.value) : undefined;
    if (!e || value === undefined || !accept(value)) return undefined;
    return (await this.backend.remove(key, e.revision)) ? value : undefined;
  }

  /** How long a key lives after its last write (as the bucket was made, maybe by another process); 0: forever. */
  ttlMs(): Promise<number> {
    return this.backend.ttlMs();
  }

  /** The keys there now (a scan: for tests and tools, not a hot path). */
  keys(): Promise<string[]> {
    return this.backend.keys();
  }

  /**
   * Read, compute, write by compare-and-set; another writer in between: read again and
   * compute again (`fn` must be pure). `fn` returning undefined leaves the key as it is.
   * Resolves to the value stored afterwards; KvContention after CAS_TRIES lost races.
   */
  async update(key: string, fn: (current: T | undefined) => T | undefined, opts: { tries?: number } = {}): Promise<T | undefined> {
    const max = opts.tries ?? CAS_TRIES;
    for (let tries = 0; tries < max; tries++) {
      const e = await this.backend.get(key);
      const current = e ? decode<T>(e.value) : undefined;
      const next = fn(current);
      if (next === undefined) return current;
      const text = JSON.stringify(next);
      const won = e ? await this.backend.replace(key, text, e.revision) : await this.backend.create(key, text);
      if (won) return next;
      // somebody wrote it since it was read: a little later, read it again
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(20, 2 * (tries + 1))));
    }
    throw new KvContention(key, max);
  }

  /**
   * A counter: add `step` (1 by default) unless that takes it past `max`; a step down never
   * goes below 0. The count afterwards, or undefined when it is at `max` already (nothing added).
   */
  async increment(key: string, max = Number.MAX_SAFE_INTEGER, step = 1): Promise<number | undefined> {
    let refused = false;
    const after = await (this as unknown as Kv<number>).update(key, (n = 0) => {
      refused = false;
      if (step > 0 && n + step > max) {
        refused = true;
        return undefined;
      }
      if (step < 0 && n <= 0) return undefined;
      return Math.max(0, n + step);
    });
    return refused ? undefined : (after ?? 0);
  }

  /** Every change from now on, with its key; undefined for a deleted key. The unsubscribe. */
  watch(onChange: (key: string, value: T | undefined) => void): Promise<() => void> {
    return this.backend.watch((key, value) => {
      onChange(key, value === undefined ? undefined : decode<T>(value));
    });
  }
}

function decode<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined; // not written by this API: taken as absent
  }
}

/** A bucket in this process's memory, with the JetStream one's behaviour (TTL per bucket). */
export function memoryKv<T>(opts: { ttlMs?: number; now?: () => number } = {}): Kv<T> {
  return new Kv<T>(new MemoryBackend(opts.ttlMs, opts.now ?? Date.now));
}

class MemoryBackend implements KvBackend {
  private readonly entries = new Map<string, { value: string; revision: number; at: number }>();
  private readonly watchers = new Set<(key: string, value: string | undefined) => void>();
  private revision = 0;

  constructor(private readonly ttl: number | undefined, private readonly now: () => number) {}

  private live(key: string): { value: string; revision: number; at: number } | undefined {
    const e = this.entries.get(key);
    if (e && this.ttl !== undefined && this.now() - e.at >= this.ttl) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  private write(key: string, value: string | undefined): void {
    if (value === undefined) this.entries.delete(key);
    else this.entries.set(key, { value, revision: ++this.revision, at: this.now() });
    for (const w of this.watchers) {
      try {
        w(key, value);
      } catch {
        // a watcher's throw is its own
      }
    }
  }

  async get(key: string): Promise<KvEntry | undefined> {
    const e = this.live(key);
    return e ? { value: e.value, revision: e.revision } : undefined;
  }
  async put(key: string, value: string): Promise<void> {
    this.write(key, value);
  }
  async create(key: string, value: string): Promise<boolean> {
    if (this.live(key)) return false;
    this.write(key, value);
    return true;
  }
  async replace(key: string, value: string, revision: number): Promise<boolean> {
    if (this.live(key)?.revision !== revision) return false;
    this.write(key, value);
    return true;
  }
  async delete(key: string): Promise<void> {
    if (this.entries.has(key)) this.write(key, undefined);
  }
  async remove(key: string, revision: number): Promise<boolean> {
    if (this.live(key)?.revision !== revision) return false;
    this.write(key, undefined);
    return true;
  }
  async ttlMs(): Promise<number> {
    return this.ttl ?? 0;
  }
  async keys(): Promise<string[]> {
    return [...this.entries.keys()].filter((k) => this.live(k));
  }
  async watch(onChange: (key: string, value: string | undefined) => void): Promise<() => void> {
    this.watchers.add(onChange);
    return () => { this.watchers.delete(onChange); };
  }
}
