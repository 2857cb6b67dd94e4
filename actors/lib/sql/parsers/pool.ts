/**
 * SQL parsers in worker threads that can be thrown away (issue 24, class E: parsers cannot be
 * taken down). Parsing is synchronous CPU work on third-party parsers: libpg-query (PostgreSQL's
 * parser in WebAssembly) overflows its stack on a long `1+1+…` and is broken for good after
 * some thirty such overflows; node-sql-parser (a PEG parser) backtracks exponentially on a few
 * nested CASTs and would hold the event loop for minutes. So the parse-and-check functions run
 * here, in a worker, never on the event loop, and a worker that misbehaves is replaced:
 *
 * - one job at a time per worker; jobs wait in a queue (FIFO) for a free worker;
 * - a job that runs past `timeoutMs` (2 s) ends its worker (terminate), and is refused with
 *   ParserFailure `timeout`;
 * - a job whose parser broke (serve.ts: anything but a CortadoError), a worker that runs out
 *   of its heap (`resourceLimits`) or exits: the worker is ended, the job refused with
 *   ParserFailure `crash` / `memory` / `exit`; the next job gets a fresh worker;
 * - jobs queued behind a job that ended its worker wait for the replacement: they are not
 *   refused for what another job did (only a job waiting longer than `queueTimeoutMs` for any
 *   worker is, with ParserFailure `unavailable`);
 * - a replacement starts at once; one that dies before it is ready is started again after a
 *   growing pause (0.2 s doubling to 5 s), so a worker that cannot start does not spin.
 *
 * The caller decides what a ParserFailure means (the guard refuses the SQL, masking treats the
 * lineage as unknown). Each replacement is counted: cortado_sql_parser_restarts_total{parser,
 * reason} (runtime/metrics.ts).
 *
 * Workers hold the process only while they have work (ref while busy, unref when idle). Shared
 * state the jobs need (the PostgreSQL allow-list as the database tightened it) is set with
 * `setState`: each worker gets a key's value once, with its first job after a change.
 *
 * The worker's code: its TypeScript module bundled into one JavaScript file at the pool's start
 * (bundle.ts: a worker then starts in about 0.1 s, not 0.3 to 1 s); if bundling fails, its
 * entry (an .mjs beside the module) registers the tsx loader first, as bin/cortado.js does.
 * The parent's flags are not passed on.
 */
import { Worker } from 'node:worker_threads';
import { CortadoError, type ErrorCode } from '../../../../protocol/errors.js';
import type { Logger } from '../../../../runtime/log.js';
import { countParserRestart } from '../../../../runtime/metrics.js';
import { bundleWorker } from './bundle.js';
import type { JobMessage, WorkerMessage } from './serve.js';

export type ParserFailureReason = 'timeout' | 'crash' | 'memory' | 'exit' | 'unavailable';

/** The job got no answer from a parser: it ran too long, its parser broke, or no worker was free in time. */
export class ParserFailure extends Error {
  override readonly name = 'ParserFailure';
  constructor(readonly reason: ParserFailureReason, message: string) {
    super(message);
  }
}

export interface ParserPoolOptions {
  /** 'guard' or 'lineage': the metric's label and the logs' */
  name: string;
  /** the worker module (TypeScript), bundled at the start */
  source: URL;
  /** its entry through tsx (.mjs), when bundling fails */
  entry: URL;
  /** workers (default 1) */
  size?: number;
  /** how long one job may run (default 2 s) */
  timeoutMs?: number;
  /** how long a job may wait for a free worker (default 15 s) */
  queueTimeoutMs?: number;
  /** the worker's heap (default 256 MB) and stack (default 16 MB: libpg-query needs more than 4 for a 30,000-level `1+1+…`) */
  heapMb?: number;
  stackMb?: number;
}

interface Job {
  id: number;
  op: string;
  args: unknown;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  waitTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  dead: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
  /** the state versions this worker has seen */
  seen: Map<string, number>;
}

const MAX_BACKOFF_MS = 5_000;

export class ParserPool {
  readonly name: string;
  readonly timeoutMs: number;
  private readonly o: Required<Omit<ParserPoolOptions, 'name'>>;
  private readonly slots = new Set<Slot>();
  private readonly queue: Job[] = [];
  private readonly state = new Map<string, { version: number; value: unknown }>();
  private readonly readyWaiters = new Set<() => void>();
  private nextId = 1;
  private started = false;
  private failedStarts = 0;
  private respawnTimer: NodeJS.Timeout | undefined;
  /** the code the workers run: the bundle, else the tsx entry */
  private script: Promise<URL> | undefined;
  /** workers asked for whose code is not there yet */
  private pending = 0;
  private log: Logger | undefined;
  /** replacements since the start, by reason (tests, bench) */
  readonly restarts = new Map<string, number>();

  constructor(opts: ParserPoolOptions) {
    this.name = opts.name;
    this.timeoutMs = opts.timeoutMs ?? 2_000;
    this.o = {
      source: opts.source,
      entry: opts.entry,
      size: Math.max(1, opts.size ?? 1),
      timeoutMs: this.timeoutMs,
      queueTimeoutMs: opts.queueTimeoutMs ?? 15_000,
      heapMb: opts.heapMb ?? 256,
      stackMb: opts.stackMb ?? 16,
    };
  }

  /** Where replacements are logged (once: the first caller's logger). */
  useLogger(log: Logger): void {
    this.log ??= log;
  }

  /** Start the workers and resolve once one is ready; INTERNAL when none is within `maxWaitMs` (default 60 s). */
  async start(maxWaitMs = 60_000): Promise<void> {
    this.ensureStarted();
    if ([...this.slots].some((s) => s.ready)) return;
    let timer: NodeJS.Timeout | undefined;
    let waiter: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        waiter = resolve;
        this.readyWaiters.add(resolve);
        this.refreshRefs();
        timer = setTimeout(() => reject(new CortadoError('INTERNAL', `the ${this.name} parser's worker thread did not start within ${maxWaitMs / 1000} s`)), maxWaitMs);
        timer.unref();
      });
    } finally {
      clearTimeout(timer);
      if (waiter) this.readyWaiters.delete(waiter);
    }
  }

  /** Shared state for the jobs (serve.ts `state`): sent to each worker with its next job. */
  setState(key: string, value: unknown): void {
    const version = (this.state.get(key)?.version ?? 0) + 1;
    this.state.set(key, { version, value });
  }

  /** Run `op` on a worker. Rejects with ParserFailure when no answer came, or the job's own CortadoError. */
  run<T>(op: string, args: unknown): Promise<T> {
    this.ensureStarted();
    return new Promise<T>((resolve, reject) => {
      const job: Job = { id: this.nextId++, op, args, resolve: resolve as (v: unknown) => void, reject };
      job.waitTimer = setTimeout(() => {
        const at = this.queue.indexOf(job);
        if (at < 0) return;
        this.queue.splice(at, 1);
        this.refreshRefs();
        reject(new ParserFailure('unavailable', `no ${this.name} parser was free within ${this.o.queueTimeoutMs} ms`));
      }, this.o.queueTimeoutMs);
      job.waitTimer.unref();
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** End every worker; queued jobs are refused. The next `run` starts the pool again. */
  async close(): Promise<void> {
    this.started = false;
    clearTimeout(this.respawnTimer);
    for (const job of this.queue.splice(0)) {
      clearTimeout(job.waitTimer);
      job.reject(new ParserFailure('unavailable', `the ${this.name} parsers were stopped`));
    }
    const ending = [...this.slots].map((s) => {
      s.dead = true;
      clearTimeout(s.timer);
      s.job?.reject(new ParserFailure('unavailable', `the ${this.name} parsers were stopped`));
      return s.worker.terminate();
    });
    this.slots.clear();
    await Promise.allSettled(ending);
  }

  // ---- workers -------------------------------------------------------------------------------

  private ensureStarted(): void {
    if (this.started) return;
    this.started = true;
    this.failedStarts = 0;
    this.fill();
  }

  /** Start workers until there are `size`. */
  private fill(): void {
    while (this.started && this.slots.size + this.pending < this.o.size) this.spawn();
  }

  private spawn(): void {
    this.script ??= bundleWorker(this.o.source, this.name).catch((err: Error) => {
      this.log?.warn({ parser: this.name, err: err.message }, 'the SQL parser worker could not be bundled; it starts through tsx (slower)');
      return this.o.entry;
    });
    this.pending++;
    void this.script.then((url) => {
      this.pending--;
      if (this.started) this.spawnWith(url);
    });
  }

  private spawnWith(url: URL): void {
    let worker: Worker;
    try {
      // no flags of the parent's: its loaders are not wanted (the entry registers its own), and some flags a worker refuses
      worker = new Worker(url, { execArgv: [], resourceLimits: { maxOldGenerationSizeMb: this.o.heapMb, stackSizeMb: this.o.stackMb } });
    } catch (err) {
      this.failedStarts++;
      this.log?.error({ parser: this.name, err: (err as Error).message }, 'a SQL parser worker cannot start');
      clearTimeout(this.respawnTimer);
      this.respawnTimer = setTimeout(() => this.fill(), Math.min(MAX_BACKOFF_MS, 200 * 2 ** (this.failedStarts - 1)));
      this.respawnTimer.unref();
      return;
    }
    const slot: Slot = { worker, ready: false, dead: false, seen: new Map() };
    this.slots.add(slot);
    worker.unref();
    worker.on('message', (m: WorkerMessage) => this.onMessage(slot, m));
    worker.on('error', (err: Error & { code?: string }) => {
      this.discard(slot, err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'memory' : 'crash', err.message);
    });
    worker.on('exit', (code) => this.discard(slot, 'exit', `the worker exited (${code})`));
    this.refreshRefs(); // jobs already waiting hold the process for it
  }

  private onMessage(slot: Slot, m: WorkerMessage): void {
    if (slot.dead) return;
    if (m.type === 'ready') {
      slot.ready = true;
      this.failedStarts = 0;
      for (const w of this.readyWaiters) w();
      this.readyWaiters.clear();
      this.dispatch(); // and the refs: nobody waits any more
      return;
    }
    const job = slot.job;
    if (!job || job.id !== m.id) return;
    if (m.type === 'broke') {
      this.discard(slot, 'crash', m.message);
      return;
    }
    clearTimeout(slot.timer);
    slot.job = undefined;
    if (m.type === 'done') job.resolve(m.value);
    else job.reject(new CortadoError(m.code as ErrorCode, m.message, m.details));
    this.dispatch();
  }

  /** End a worker that timed out, broke or died; refuse its job; start a replacement. */
  private discard(slot: Slot, reason: Exclude<ParserFailureReason, 'unavailable'>, why: string): void {
    if (slot.dead) return;
    slot.dead = true;
    clearTimeout(slot.timer);
    this.slots.delete(slot);
    void slot.worker.terminate().catch(() => undefined);
    const job = slot.job;
    slot.job = undefined;
    if (!this.started) return; // closing
    this.restarts.set(reason, (this.restarts.get(reason) ?? 0) + 1);
    countParserRestart(this.name, reason);
    this.log?.warn({ parser: this.name, reason, why: why.slice(0, 200) }, 'a SQL parser worker was replaced');
    if (job) {
      const message = reason === 'timeout' ? `the ${this.name} parser ran past ${this.o.timeoutMs} ms` : `the ${this.name} parser failed (${why.slice(0, 200)})`;
      job.reject(new ParserFailure(reason, message));
    }
    if (!slot.ready) this.failedStarts++;
    const pause = this.failedStarts === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 200 * 2 ** (this.failedStarts - 1));
    if (pause === 0) {
      this.fill();
    } else {
      clearTimeout(this.respawnTimer);
      this.respawnTimer = setTimeout(() => this.fill(), pause);
      this.respawnTimer.unref();
    }
    this.dispatch();
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) break;
      if (!slot.ready || slot.dead || slot.job) continue;
      const job = this.queue.shift()!;
      clearTimeout(job.waitTimer);
      slot.job = job;
      const message: JobMessage = { id: job.id, op: job.op, args: job.args };
      for (const [key, s] of this.state) {
        if (slot.seen.get(key) === s.version) continue;
        (message.state ??= {})[key] = s.value;
        slot.seen.set(key, s.version);
      }
      slot.timer = setTimeout(() => this.discard(slot, 'timeout', `ran past ${this.o.timeoutMs} ms`), this.o.timeoutMs);
      slot.timer.unref();
      try {
        slot.worker.postMessage(message);
      } catch (err) {
        // arguments that do not clone: a bug of the caller, refused without harm to the worker
        clearTimeout(slot.timer);
        slot.job = undefined;
        job.reject(err as Error);
      }
    }
    this.refreshRefs();
  }

  /** Hold the process while there is work (or someone waits for a worker to start); an idle pool never keeps it alive. */
  private refreshRefs(): void {
    const busy = this.queue.length > 0 || this.readyWaiters.size > 0 || [...this.slots].some((s) => s.job);
    for (const s of this.slots) {
      if (busy) s.worker.ref();
      else s.worker.unref();
    }
  }
}
