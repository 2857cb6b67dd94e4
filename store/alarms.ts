/**
 * Where alarms are kept (the alarms actor's repository). Three implementations of one interface:
 *
 * - `FileAlarms`: the JSON file at `alarms.storage_path` (config_db off). Every change is a
 *   read-modify-write under an exclusive lock file (`<file>.lock`, created with O_EXCL, holding
 *   the holder's pid, host and a nonce), written to a temporary file in the same directory,
 *   fsynced and renamed over the file (then the directory fsynced): a reader sees the old file or
 *   the new one, never half of one, and two processes never interleave their changes. A lock whose
 *   holder is gone (its pid no longer runs on this host, or it is older than LOCK_STALE_MS) is
 *   broken, under a second lock file (`<file>.lock.break`) so that two breakers cannot both win.
 *   A file that is not there is reported (`state: 'missing'`, a warning) and made at the first
 *   change; a file that cannot be read, is not JSON or does not hold alarms as written here is an
 *   error naming the file, for every request, until someone fixes or moves it: it is NEVER reset.
 * - `PostgresAlarms`: config_db's cortado_alarms (one row per alarm, the record as jsonb); a
 *   change is the same read-modify-write inside a transaction holding the row (SELECT … FOR
 *   UPDATE). When config_db is on it wins: storage_path is not read.
 * - `MemoryAlarms`: this process only (tests, and config_db's memory Storage twin).
 *
 * `mutate(id, fn)` is the one way to change an alarm: `fn` sees the record as stored now and
 * returns the next one, or null to leave it; the alarms actor claims evaluation ticks and applies
 * state changes with it, so two processes deciding at once decide one after the other.
 */
import { randomUUID } from 'node:crypto';
import { constants as FS } from 'node:fs';
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from '../runtime/log.js';
import { Alarm } from '../protocol/schemas/alarms.js';
import type { PgDatabase } from './postgres.js';
import { json } from './postgres.js';
import { copy } from './values.js';

/** An alarm as stored: the API's record and the newest cron tick claimed for evaluation. */
export const AlarmRecord = Type.Object({ ...Alarm.properties, evaluated_through: Type.Optional(Type.String()) });
export type AlarmRecord = Static<typeof AlarmRecord>;

export interface AlarmsRepository {
  readonly kind: 'file' | 'postgresql' | 'memory';
  /** the file's path (file), else undefined */
  readonly path?: string;
  /** ok, or missing (file: not there yet); throws when the store cannot be read */
  state(): Promise<'ok' | 'missing'>;
  /** every alarm, oldest first */
  list(): Promise<AlarmRecord[]>;
  get(id: string): Promise<AlarmRecord | undefined>;
  /** CONFLICT when the name is taken */
  create(record: AlarmRecord): Promise<AlarmRecord>;
  /** read-modify-write of one alarm; undefined when there is no such alarm */
  mutate(id: string, fn: (current: AlarmRecord) => AlarmRecord | null): Promise<{ record: AlarmRecord; changed: boolean } | undefined>;
  delete(id: string): Promise<boolean>;
}

const checkRecord = Compile(AlarmRecord);

function nameTaken(name: string): CortadoError {
  return new CortadoError('CONFLICT', `an alarm named "${name}" exists already`, { field: 'name' });
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

// ---- memory ---------------------------------------------------------------------------------

export class MemoryAlarms implements AlarmsRepository {
  readonly kind = 'memory' as const;
  private readonly rows = new Map<string, AlarmRecord>();

  async state(): Promise<'ok'> {
    return 'ok';
  }
  async list(): Promise<AlarmRecord[]> {
    return [...this.rows.values()].map(copy);
  }
  async get(id: string): Promise<AlarmRecord | undefined> {
    return copy(this.rows.get(id));
  }
  async create(record: AlarmRecord): Promise<AlarmRecord> {
    if ([...this.rows.values()].some((r) => sameName(r.name, record.name))) throw nameTaken(record.name);
    this.rows.set(record.id, copy(record));
    return copy(record);
  }
  async mutate(id: string, fn: (current: AlarmRecord) => AlarmRecord | null): Promise<{ record: AlarmRecord; changed: boolean } | undefined> {
    const cur = this.rows.get(id);
    if (!cur) return undefined;
    const next = fn(copy(cur));
    if (!next) return { record: copy(cur), changed: false };
    if (next.name !== cur.name && [...this.rows.values()].some((r) => r.id !== id && sameName(r.name, next.name))) throw nameTaken(next.name);
    this.rows.set(id, copy(next));
    return { record: copy(next), changed: true };
  }
  async delete(id: string): Promise<boolean> {
    return this.rows.delete(id);
  }
}

// ---- the JSON file ------------------------------------------------------------------------------

/** a lock older than this is taken as left behind, whoever holds it (a change takes milliseconds) */
export const LOCK_STALE_MS = 30_000;
/** how long a change waits for the lock before it gives up (TIMEOUT) */
const LOCK_WAIT_MS = 10_000;
/** a breaker lock older than this was left by a process that died while breaking */
const BREAK_STALE_MS = 5_000;
const FILE_VERSION = 1;

interface LockContent {
  pid: number;
  host: string;
  nonce: string;
  at: string;
}

export interface FileAlarmsOptions {
  /** how long a change waits for the lock (default 10 s) */
  lockWaitMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException | null)?.code ?? 'EUNKNOWN';
}

/** Whether a process with this pid runs on this host (EPERM: it runs, as somebody else). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
}

export class FileAlarms implements AlarmsRepository {
  readonly kind = 'file' as const;
  readonly path: string;
  private readonly lockPath: string;
  private readonly waitMs: number;
  private warnedMissing = false;

  constructor(file: string, private readonly log: Logger, opts: FileAlarmsOptions = {}) {
    this.path = path.resolve(file);
    this.lockPath = `${this.path}.lock`;
    this.waitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
  }

  private broken(why: string, err?: unknown): CortadoError {
    return new CortadoError('INTERNAL', `the alarms file ${this.path} ${why}; it is left as it is (Cortado never resets it): fix it or move it away`, { file: this.path }, err ? { cause: err } : undefined);
  }

  /** The file's alarms; `missing` when it is not there. Throws (naming the file) when it cannot be used. */
  private async read(): Promise<{ records: AlarmRecord[]; missing: boolean }> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (errno(err) === 'ENOENT') {
        if (!this.warnedMissing) {
          this.warnedMissing = true;
          this.log.warn({ file: this.path }, 'the alarms file is not there: no alarms yet (it is made at the first change); if it held alarms, it was moved or deleted');
        }
        return { records: [], missing: true };
      }
      throw new CortadoError('INTERNAL', `the alarms file ${this.path} cannot be read (${errno(err)}); alarms are not evaluated until it can`, { file: this.path }, { cause: err });
    }
    this.warnedMissing = false;
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw this.broken(`is not valid JSON (${(err as Error).message.slice(0, 200)})`);
    }
    const d = doc as { version?: unknown; alarms?: unknown };
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || !Array.isArray(d.alarms)) throw this.broken('does not hold {"version": 1, "alarms": [...]}');
    if (d.version !== FILE_VERSION) throw this.broken(`is of version ${JSON.stringify(d.version)}, which this Cortado does not read (it writes version ${FILE_VERSION})`);
    d.alarms.forEach((r, i) => {
      if (!checkRecord.Check(r)) {
        const e = checkRecord.Errors(r)[0];
        throw this.broken(`holds an alarm that is not one (alarms[${i}]${e?.instancePath ?? ''}: ${e?.message ?? 'invalid'})`);
      }
    });
    return { records: d.alarms as AlarmRecord[], missing: false };
  }

  /** Write the whole file: a temporary file beside it, fsynced, renamed over it, the directory fsynced. */
  private async write(records: AlarmRecord[]): Promise<void> {
    const dir = path.dirname(this.path);
    const tmp = path.join(dir, `.${path.basename(this.path)}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`);
    const text = `${JSON.stringify({ version: FILE_VERSION, alarms: records }, null, 2)}\n`;
    try {
      const fh = await open(tmp, FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL, 0o600);
      try {
        await fh.writeFile(text, 'utf8');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw new CortadoError('INTERNAL', `the alarms file ${this.path} cannot be written (${errno(err)}); nothing was changed`, { file: this.path }, { cause: err });
    }
    try {
      const d = await open(dir, 'r');
      try {
        await d.sync();
      } finally {
        await d.close();
      }
    } catch {
      // a file system that cannot fsync a directory: the rename is still atomic
    }
    this.warnedMissing = false;
  }

  private async readLock(file: string): Promise<{ content?: LockContent; raw: string; ageMs: number } | undefined> {
    try {
      const [raw, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
      let content: LockContent | undefined;
      try {
        const c = JSON.parse(raw) as LockContent;
        if (typeof c.pid === 'number' && typeof c.nonce === 'string') content = c;
      } catch {
        // being written (created, not yet filled) or garbage: judged by its age alone
      }
      return { ...(content ? { content } : {}), raw, ageMs: Date.now() - st.mtimeMs };
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  private stale(lock: { content?: LockContent; ageMs: number }): boolean {
    if (lock.ageMs > LOCK_STALE_MS) return true;
    const c = lock.content;
    return c !== undefined && c.host === hostname() && c.pid !== process.pid && !alive(c.pid);
  }

  /** Remove a stale lock, under the breaker lock, if it is still the same stale lock. True when removed. */
  private async breakStale(): Promise<boolean> {
    const seen = await this.readLock(this.lockPath);
    if (!seen) return true;
    if (!this.stale(seen)) return false;
    const breaker = `${this.lockPath}.break`;
    let fh;
    try {
      fh = await open(breaker, FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL, 0o600);
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err;
      const b = await this.readLock(breaker);
      if (b && b.ageMs > BREAK_STALE_MS) await unlink(breaker).catch(() => undefined);
      return false;
    }
    try {
      await fh.close();
      const again = await this.readLock(this.lockPath);
      if (again && again.raw === seen.raw && this.stale(again)) {
        await unlink(this.lockPath).catch(() => undefined);
        this.log.warn({ file: this.path, holder: seen.content ?? 'unknown', age_ms: Math.round(seen.ageMs) }, 'a stale alarms lock was broken (its holder is gone)');
      }
      return true;
    } finally {
      await unlink(breaker).catch(() => undefined);
    }
  }

  private async lock(): Promise<string> {
    const nonce = randomUUID();
    const content: LockContent = { pid: process.pid, host: hostname(), nonce, at: new Date().toISOString() };
    const deadline = Date.now() + this.waitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const fh = await open(this.lockPath, FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL, 0o600);
        try {
          await fh.writeFile(JSON.stringify(content), 'utf8');
        } finally {
          await fh.close();
        }
        return nonce;
      } catch (err) {
        const code = errno(err);
        if (code === 'ENOENT') {
          await mkdir(path.dirname(this.path), { recursive: true });
          continue;
        }
        if (code !== 'EEXIST') throw new CortadoError('INTERNAL', `the alarms lock ${this.lockPath} cannot be made (${code})`, { file: this.path }, { cause: err });
      }
      if (await this.breakStale()) continue;
      if (Date.now() > deadline) {
        const holder = (await this.readLock(this.lockPath))?.content;
        throw new CortadoError('TIMEOUT', `the alarms file ${this.path} stayed locked for ${this.waitMs} ms${holder ? ` (by pid ${holder.pid} on ${holder.host})` : ''}`, { file: this.path });
      }
      await sleep(Math.min(50, 2 + attempt) + Math.random() * 5);
    }
  }

  private async unlock(nonce: string): Promise<void> {
    const cur = await this.readLock(this.lockPath).catch(() => undefined);
    if (cur?.content?.nonce === nonce) await unlink(this.lockPath).catch(() => undefined);
    else this.log.warn({ file: this.path }, 'the alarms lock was no longer this process\'s when it let go of it (held too long?)');
  }

  /** Read, change and write the file under the lock. `change` returns the records to write, or null for none. */
  private async locked<T>(change: (records: AlarmRecord[]) => { write: AlarmRecord[] | null; result: T }): Promise<T> {
    const nonce = await this.lock();
    try {
      const { records } = await this.read();
      const { write, result } = change(records);
      if (write) await this.write(write);
      return result;
    } finally {
      await this.unlock(nonce);
    }
  }

  async state(): Promise<'ok' | 'missing'> {
    return (await this.read()).missing ? 'missing' : 'ok';
  }
  async list(): Promise<AlarmRecord[]> {
    return (await this.read()).records;
  }
  async get(id: string): Promise<AlarmRecord | undefined> {
    return (await this.read()).records.find((r) => r.id === id);
  }
  create(record: AlarmRecord): Promise<AlarmRecord> {
    return this.locked((records) => {
      if (records.some((r) => sameName(r.name, record.name))) throw nameTaken(record.name);
      return { write: [...records, copy(record)], result: copy(record) };
    });
  }
  mutate(id: string, fn: (current: AlarmRecord) => AlarmRecord | null): Promise<{ record: AlarmRecord; changed: boolean } | undefined> {
    return this.locked<{ record: AlarmRecord; changed: boolean } | undefined>((records) => {
      const i = records.findIndex((r) => r.id === id);
      const cur = records[i];
      if (!cur) return { write: null, result: undefined };
      const next = fn(copy(cur));
      if (!next) return { write: null, result: { record: cur, changed: false } };
      if (!sameName(next.name, cur.name) && records.some((r) => r.id !== id && sameName(r.name, next.name))) throw nameTaken(next.name);
      const out = [...records];
      out[i] = copy(next);
      return { write: out, result: { record: copy(next), changed: true } };
    });
  }
  delete(id: string): Promise<boolean> {
    return this.locked((records) => {
      const out = records.filter((r) => r.id !== id);
      return out.length === records.length ? { write: null, result: false } : { write: out, result: true };
    });
  }
}

// ---- config_db ------------------------------------------------------------------------------------

interface Row {
  record: AlarmRecord;
}

export class PostgresAlarms implements AlarmsRepository {
  readonly kind = 'postgresql' as const;

  constructor(private readonly db: PgDatabase) {}

  async state(): Promise<'ok'> {
    return 'ok';
  }
  async list(): Promise<AlarmRecord[]> {
    const r = await this.db.query<Row>('SELECT record FROM cortado_alarms ORDER BY seq');
    return r.rows.map((x) => x.record);
  }
  async get(id: string): Promise<AlarmRecord | undefined> {
    const r = await this.db.query<Row>('SELECT record FROM cortado_alarms WHERE id = $1', [id]);
    return r.rows[0]?.record;
  }
  async create(record: AlarmRecord): Promise<AlarmRecord> {
    try {
      await this.db.query('INSERT INTO cortado_alarms (id, name, record, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)',
        [record.id, record.name, json(record), record.created_at, record.updated_at]);
    } catch (err) {
      if (err instanceof CortadoError && err.code === 'CONFLICT') throw nameTaken(record.name);
      throw err;
    }
    return copy(record);
  }
  async mutate(id: string, fn: (current: AlarmRecord) => AlarmRecord | null): Promise<{ record: AlarmRecord; changed: boolean } | undefined> {
    let name = '';
    try {
      return await this.db.tx(async (c) => {
        const r = await c.query<Row>('SELECT record FROM cortado_alarms WHERE id = $1 FOR UPDATE', [id]);
        const cur = r.rows[0]?.record;
        if (!cur) return undefined;
        const next = fn(copy(cur));
        if (!next) return { record: cur, changed: false };
        name = next.name;
        await c.query('UPDATE cortado_alarms SET name = $2, record = $3, updated_at = $4 WHERE id = $1', [id, next.name, json(next), next.updated_at]);
        return { record: copy(next), changed: true };
      });
    } catch (err) {
      if (err instanceof CortadoError && err.code === 'CONFLICT') throw nameTaken(name);
      throw err;
    }
  }
  async delete(id: string): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_alarms WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }
}
