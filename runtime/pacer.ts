/**
 * Pacing: work that arrives in a burst is spread over event-loop turns, so that timers, I/O,
 * `/health` and NATS pings are never held up for long.
 *
 * Why it is needed: questions move in step. Hundreds of model answers (or database results, or
 * new requests) can be ready in one poll of the event loop, and each one's callback would carry
 * its question on — parse, guard, query, mask, reply — before the loop looks at anything else:
 * hundreds of questions' worth of CPU in one stretch (stalls of 200–900 ms at 2,000 questions in
 * flight on two cores; docs/benchmarks.md).
 *
 * How: where work arrives from outside — a request's first hop (an HTTP request, a schedule), a
 * request from NATS, a model's answer, a database's result — it `await pace(key)` first. While
 * the current stretch of work is younger than BUDGET_MS and no older step waits, `pace()` returns
 * undefined and the caller goes on at once (no cost at ordinary load: no promise, no extra turn).
 * Otherwise the step waits and is let go in the check phase of a later turn: each turn lets go as
 * many as fit in BUDGET_MS at the cost measured so far, then the poll (I/O, timers) runs before
 * the next. Hops within the process (the assistant asking the executor) are not paced: a step
 * once let go runs on to its next wait for I/O. The work itself is not changed, only moved.
 *
 * Who goes first: the smallest key, then the first to ask. A bus request's key is when this
 * process first saw its request id (every hop of a question carries the question's), so the
 * questions that came first finish first; a first-come order of steps would instead take every
 * question in a burst a step at a time and finish them all late (twice the mean wait of
 * finishing them in turn).
 */

/** the longest stretch of paced work in one event-loop turn */
export const BUDGET_MS = 5;
/** at most this many steps are let go in one turn, however cheap */
const MAX_PER_TURN = 512;

interface Waiter {
  key: number;
  seq: number;
  go: () => void;
}

/** the waiting steps: a binary heap, smallest (key, seq) at the top */
const heap: Waiter[] = [];
let seq = 0;
/** when the current stretch of unpaced work began (0: none since the last check phase) */
let stretchFrom = 0;
let resetArmed = false;
/** a turn of releases is scheduled */
let releasing = false;

function resetStretch(): void {
  resetArmed = false;
  stretchFrom = 0;
}

function queued(): number {
  return heap.length;
}

const before = (a: Waiter, b: Waiter): boolean => a.key < b.key || (a.key === b.key && a.seq < b.seq);

function push(w: Waiter): void {
  let i = heap.length;
  heap.push(w);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(w, heap[parent]!)) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = w;
}

function take(): (() => void) | undefined {
  const top = heap[0];
  if (!top) return undefined;
  const last = heap.pop()!;
  if (heap.length > 0) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= heap.length) break;
      const r = l + 1;
      const c = r < heap.length && before(heap[r]!, heap[l]!) ? r : l;
      if (!before(heap[c]!, last)) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
  }
  return top.go;
}

/** what one released step cost, on average (ms, a moving average): how many fit in a turn */
let stepMs = 0.2;
/** how many the last turn let go at most */
let lastFit = 4;

/**
 * Schedules the next turn's releases: two immediates in one check phase — the first lets go as
 * many steps as fit in BUDGET_MS at the cost seen so far (their microtasks run right after it),
 * the second measures what they took and schedules the next turn if anyone still waits.
 */
function scheduleTurn(): void {
  releasing = true;
  let began = 0;
  let released = 0;
  setImmediate(() => {
    began = performance.now();
    // the released steps' own next steps go on within this turn's budget while none older waits
    stretchFrom = began;
    if (!resetArmed) {
      resetArmed = true;
      setImmediate(resetStretch);
    }
    // as many as fit at the cost seen so far, and at most about twice the last turn's: a wrong
    // guess costs one short turn, not one long one
    const fit = Math.max(1, Math.min(MAX_PER_TURN, Math.floor(BUDGET_MS / stepMs), 2 * lastFit + 1));
    lastFit = fit;
    for (; released < fit; released++) {
      const go = take();
      if (!go) break;
      go();
    }
  });
  setImmediate(() => {
    if (released > 0) {
      // dearer steps count at once, cheaper ones bit by bit
      const measured = Math.max(0.005, (performance.now() - began) / released);
      stepMs = measured > stepMs ? measured : 0.7 * stepMs + 0.3 * measured;
    }
    releasing = false;
    if (queued() > 0) scheduleTurn();
  });
}

/** when this process first saw each request id (insertion order is age order: the oldest are dropped first) */
const firstSeen = new Map<string, number>();
const REMEMBERED = 20_000;

/** A request's key: when this process first paced one of its steps (epoch ms). */
export function requestKey(requestId: string): number {
  let at = firstSeen.get(requestId);
  if (at === undefined) {
    at = Date.now();
    firstSeen.set(requestId, at);
    if (firstSeen.size > REMEMBERED) {
      for (const k of firstSeen.keys()) {
        firstSeen.delete(k);
        if (firstSeen.size <= REMEMBERED * 0.9) break;
      }
    }
  }
  return at;
}

/**
 * `await pace(key)` where a step of work starts (key: when its request began here, epoch ms —
 * requestKey(); smaller goes first; absent: now). Undefined: go on now; else a promise that
 * resolves when its turn comes.
 */
export function pace(key?: number): Promise<void> | undefined {
  const now = performance.now();
  if (stretchFrom === 0) {
    stretchFrom = now;
    if (!resetArmed) {
      resetArmed = true;
      setImmediate(resetStretch);
    }
  }
  const k = key ?? Date.now();
  // within the stretch's budget, a step goes on unless an older one waits
  if (now - stretchFrom < BUDGET_MS && (heap.length === 0 || k <= heap[0]!.key)) return undefined;
  return new Promise<void>((resolve) => {
    push({ key: k, seq: seq++, go: resolve });
    if (!releasing) scheduleTurn();
  });
}

/** Steps waiting for their turn (metrics, tests). */
export function pacedWaiting(): number {
  return queued();
}
