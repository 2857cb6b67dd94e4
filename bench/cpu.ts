/**
 * CPU accounting for the benchmark (Linux /proc): CPU time of named processes and of the
 * whole machine between two points, so each cell can say how many CPU milliseconds one
 * request costs and where (cortado, nats-server, the model, PostgreSQL, the load generator).
 * Elsewhere (no /proc) every figure is NaN and the table says so.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on every Linux we run on

function ticksOf(pid: number): number {
  try {
    // fields after the command (which may hold spaces): state is the 3rd, utime the 14th
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return NaN;
  }
}

/** every PostgreSQL backend and helper process (their command line starts with "postgres") */
function postgresTicks(): number {
  let sum = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return NaN;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').startsWith('postgres')) sum += ticksOf(Number(e)) || 0;
    } catch { /* gone */ }
  }
  return sum;
}

function machineTicks(): { busy: number; all: number } {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
    const all = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: all - idle, all };
  } catch {
    return { busy: NaN, all: NaN };
  }
}

export type Snapshot = Record<string, number>;

/** `pids`: name → the processes counted under it */
export function snapshot(pids: Record<string, Array<number | undefined>>): Snapshot {
  const s: Snapshot = {};
  for (const [name, list] of Object.entries(pids)) s[name] = list.reduce<number>((sum, pid) => sum + (pid === undefined ? NaN : ticksOf(pid)), 0);
  s.postgres = postgresTicks();
  s.machine = machineTicks().busy;
  return s;
}

/** CPU ms per request of each entry between two snapshots. */
export function perRequest(a: Snapshot, b: Snapshot, requests: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(b)) out[k] = (((b[k] ?? NaN) - (a[k] ?? NaN)) * TICK_MS) / Math.max(1, requests);
  return out;
}
