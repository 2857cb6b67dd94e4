/**
 * Loaded into a cortado process by the latency benchmark (`node --import bench/loop-probe.mjs`):
 * measures the process's event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution)
 * and, on SIGUSR2, writes {max_ms, p99_ms, mean_ms, rss_bytes} to BENCH_LOOP_FILE and starts
 * over (own_max_ms beside them: see below). On SIGWINCH (when the process runs with --expose-gc) it collects garbage fully and writes
 * {heap_bytes, rss_bytes} to BENCH_HEAP_FILE: the heap that is really held at that moment.
 * Not part of the product.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_FILE;
if (file) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  // On a machine shared with other work, a delay may be the kernel running someone else rather
  // than this process blocking its loop. A 10 ms ticker also counts the CPU time the process
  // used between two ticks: the part of a delay it spent working (own_max_ms) is what its own
  // code (or its garbage collection) held the loop for.
  let ownMax = 0;
  let lastWall = performance.now();
  let lastCpu = process.cpuUsage();
  setInterval(() => {
    const wall = performance.now();
    const cpu = process.cpuUsage();
    const used = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000;
    const own = Math.min(wall - lastWall, used) - 10;
    if (own > ownMax) ownMax = own;
    lastWall = wall;
    lastCpu = cpu;
  }, 10).unref();
  process.on('SIGUSR2', () => {
    const ms = (ns) => Math.round((ns / 1e6) * 10) / 10;
    writeFileSync(file, JSON.stringify({ max_ms: ms(h.max), p99_ms: ms(h.percentile(99)), mean_ms: ms(h.mean), own_max_ms: Math.round(Math.max(0, ownMax) * 10) / 10, rss_bytes: process.memoryUsage.rss() }));
    h.reset();
    ownMax = 0;
  });
}
const heapFile = process.env.BENCH_HEAP_FILE;
if (heapFile && typeof globalThis.gc === 'function') {
  process.on('SIGWINCH', () => {
    globalThis.gc();
    globalThis.gc();
    const m = process.memoryUsage();
    writeFileSync(heapFile, JSON.stringify({ heap_bytes: m.heapUsed + m.external + m.arrayBuffers, rss_bytes: m.rss }));
  });
}
