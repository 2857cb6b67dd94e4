/**
 * JetStream Object Store behind a small file API: how a file made in one process (an export
 * written by the executor) reaches another (the mailer attaching it, the edge sending it to a
 * browser) when a NATS message is capped near 1 MB. The only place that sees @nats-io/obj.
 * A bucket is opened (made when missing) by `Bus.objects(bucket)`; its name comes from
 * protocol/subjects.ts. Objects are written and read as streams, in chunks: neither side holds
 * a whole file.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { Objm, setSha256Backend, StorageType, type ObjectStore } from '@nats-io/obj';
import { CortadoError } from '../protocol/errors.js';
import type { BusConnection } from './bus-connection.js';
import { bucketName, type Bucket } from '../protocol/subjects.js';

// the object store checks every object's SHA-256; its default is a pure-JS hash that holds the
// event loop for most of a second per 30 MB: Node's own (OpenSSL) instead
setSha256Backend('native');

export interface ObjectBucketOptions {
  /** how long an object is kept after it was written */
  ttlMs?: number;
  /** the bucket's bytes at most */
  maxBytes?: number;
  /** copies JetStream keeps (the bus passes config bus.replicas) */
  replicas?: number;
}

export interface StoredObject {
  name: string;
  bytes: number;
  /** what the writer said it is (filename, content type) */
  meta: Record<string, string>;
}

export interface ObjectBucket {
  /** Store a file from disk under `name`, in chunks. */
  putFile(name: string, file: string, meta?: Record<string, string>): Promise<StoredObject>;
  /** Store bytes under `name`. */
  putBytes(name: string, data: Uint8Array, meta?: Record<string, string>): Promise<StoredObject>;
  /** An object's description and its bytes as a stream; undefined when there is none (or it expired). */
  get(name: string): Promise<{ info: StoredObject; stream: Readable } | undefined>;
  /** An object's bytes whole (bounded by `maxBytes`: a larger one is LIMIT_EXCEEDED). */
  getBytes(name: string, maxBytes: number): Promise<{ info: StoredObject; data: Buffer } | undefined>;
  delete(name: string): Promise<void>;
}

const NS_PER_MS = 1_000_000;

/** An object store on the bus's connection, `<prefix>_<bucket>`, made when missing. */
export async function openObjects(conn: BusConnection, bucket: Bucket, opts: ObjectBucketOptions = {}): Promise<ObjectBucket> {
  const os = await new Objm(conn.nc).create(bucketName(conn.prefix, bucket), {
    storage: StorageType.File,
    replicas: opts.replicas ?? conn.replicas,
    ...(opts.ttlMs !== undefined ? { ttl: opts.ttlMs * NS_PER_MS } : {}),
    ...(opts.maxBytes !== undefined ? { max_bytes: opts.maxBytes } : {}),
  });
  return new NatsObjects(os);
}

function headersOf(meta: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, v.replace(/[\r\n]+/g, ' ')]));
}

class NatsObjects implements ObjectBucket {
  constructor(private readonly os: ObjectStore) {}

  private described(name: string, bytes: number, meta: Record<string, string>): StoredObject {
    return { name, bytes, meta };
  }

  async putFile(name: string, file: string, meta: Record<string, string> = {}): Promise<StoredObject> {
    const web = Readable.toWeb(createReadStream(file, { highWaterMark: 128 * 1024 })) as unknown as ReadableStream<Uint8Array>;
    const info = await this.os.put({ name, description: meta.filename ?? '', metadata: headersOf(meta) }, web);
    return this.described(name, info.size, meta);
  }

  async putBytes(name: string, data: Uint8Array, meta: Record<string, string> = {}): Promise<StoredObject> {
    const info = await this.os.putBlob({ name, description: meta.filename ?? '', metadata: headersOf(meta) }, data);
    return this.described(name, info.size, meta);
  }

  async get(name: string): Promise<{ info: StoredObject; stream: Readable } | undefined> {
    const r = await this.os.get(name);
    if (!r || r.info.deleted) return undefined;
    const stream = Readable.fromWeb(r.data as unknown as WebReadableStream<Uint8Array>);
    void r.error.then((err) => { if (err) stream.destroy(err); }, (err: Error) => stream.destroy(err));
    return { info: this.described(name, r.info.size, { ...(r.info.metadata ?? {}) }), stream };
  }

  async getBytes(name: string, maxBytes: number): Promise<{ info: StoredObject; data: Buffer } | undefined> {
    const info = await this.os.info(name);
    if (!info || info.deleted) return undefined;
    if (info.size > maxBytes) throw new CortadoError('LIMIT_EXCEEDED', `the stored file is ${info.size} bytes, over the ${maxBytes} bytes allowed here`);
    const got = await this.get(name);
    if (!got) return undefined;
    const chunks: Buffer[] = [];
    for await (const c of got.stream) chunks.push(Buffer.from(c as Uint8Array));
    return { info: got.info, data: Buffer.concat(chunks) };
  }

  async delete(name: string): Promise<void> {
    try {
      await this.os.delete(name);
    } catch {
      // already gone (expired, or deleted by another reader)
    }
  }
}
