/**
 * runtime/pacer.ts: a burst of steps is spread over event-loop turns (timers run in between),
 * every step runs, in the order it asked; at ordinary load nothing waits.
 */
import t from 'tap';
import { BUDGET_MS, pace, pacedWaiting } from '../../runtime/pacer.js';

/** Keeps the CPU busy for `ms` (a step's own work). */
function burn(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* work */ }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `n` steps of `ms` each, all started in one go; returns the most CPU this process spent
 * between two ticks of a 2 ms timer meanwhile (its own CPU: on a loaded machine other processes'
 * turns lengthen every gap in wall time, not in this process's CPU).
 */
async function burst(n: number, ms: number, paced: boolean, order: number[]): Promise<number> {
  const ticks: number[] = [];
  const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const timer = setInterval(() => ticks.push(cpuMs()), 2);
  await sleep(20);
  const steps: Array<Promise<void>> = [];
  const began = cpuMs();
  for (let i = 0; i < n; i++) {
    steps.push((async () => {
      if (paced) {
        const turn = pace();
        if (turn) await turn;
      }
      burn(ms);
      order.push(i);
    })());
  }
  await Promise.all(steps);
  const ended = cpuMs();
  await sleep(10);
  clearInterval(timer);
  let gap = 0;
  let last = began;
  for (const at of ticks.filter((x) => x >= began)) {
    gap = Math.max(gap, at - last);
    last = at;
  }
  return Math.max(gap, ended - last);
}

t.test('a burst is spread: timers run between turns; every step runs, in order', async (t) => {
  const order: number[] = [];
  const gap = await burst(200, 1, true, order);
  t.same(order, Array.from({ length: 200 }, (_, i) => i), 'every step, in the order it asked');
  // about BUDGET_MS of steps per turn, then the timers: far from the 200 ms of the whole burst
  t.ok(gap < 50, `the most CPU spent without a timer tick: ${gap.toFixed(1)} ms`);
  t.equal(pacedWaiting(), 0, 'nobody left waiting');

  const unpaced: number[] = [];
  const control = await burst(200, 1, false, unpaced);
  t.ok(control >= 150, `without pacing the same burst holds the loop: ${control.toFixed(1)} ms (the measure works)`);
});

t.test('at ordinary load nothing waits: pace() says go on', async (t) => {
  await sleep(5);
  let waited = 0;
  for (let i = 0; i < 20; i++) {
    await sleep(1);
    const turn = pace();
    if (turn) {
      waited++;
      await turn;
    }
  }
  t.equal(waited, 0, 'a step now and then never waits');
});

t.test('a step that paces again waits behind the steps already waiting', async (t) => {
  await sleep(5);
  t.equal(pace(), undefined, 'a fresh stretch: go on');
  burn(BUDGET_MS + 1); // the stretch is over its budget: the next steps wait
  const seen: string[] = [];
  const steps = [0, 1, 2, 3].map(async (i) => {
    await pace();
    seen.push(`first ${i}`);
    burn(BUDGET_MS); // a whole turn's budget: the others wait for the next turns
    await pace();
    seen.push(`second ${i}`);
  });
  t.ok(pacedWaiting() >= 4, 'the four wait');
  await Promise.all(steps);
  t.same(seen, ['first 0', 'first 1', 'first 2', 'first 3', 'second 0', 'second 1', 'second 2', 'second 3']);
});

t.test('the smallest key goes first: the question that came first (its deadline first) finishes first', async (t) => {
  await sleep(5);
  pace();
  burn(BUDGET_MS + 1);
  const seen: number[] = [];
  const keys = [50, 10, 40, 10, 30, 20];
  const steps = keys.map(async (key, i) => {
    await pace(key);
    seen.push(i);
  });
  await Promise.all(steps);
  t.same(seen, [1, 3, 5, 4, 2, 0], 'by key, then in the order they asked');
});

t.test('many steps with random keys, waiting again and again: every one finishes, nobody is lost', async (t) => {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  let done = 0;
  const steps = Array.from({ length: 3_000 }, async () => {
    const key = Math.floor(rnd() * 1_000);
    for (let hop = 0; hop < 1 + Math.floor(rnd() * 4); hop++) {
      await pace(rnd() < 0.5 ? key : undefined);
      burn(rnd() * 0.05);
      if (rnd() < 0.1) await new Promise((r) => setTimeout(r, rnd() * 3));
    }
    done++;
  });
  await Promise.all(steps);
  t.equal(done, 3_000);
  t.equal(pacedWaiting(), 0);
});
