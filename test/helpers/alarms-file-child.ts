/**
 * A second process on the alarms file (test/actors/alarms-store.test.ts), run with
 * `node --import tsx alarms-file-child.ts <mode> <file> <id> <n>`:
 *
 *   bump <file> <id> <n>   n read-modify-writes of one alarm (value + 1), each under the lock
 *   read <file> <id> <n>   n raw reads of the file, counting the ones that are not whole JSON
 *   hold <file>            take the lock, print "locked", and wait to be killed
 *
 * Prints one JSON line: what it did.
 */
import { readFile } from 'node:fs/promises';
import { createLogger } from '../../runtime/log.js';
import { FileAlarms } from '../../store/index.js';

const [mode, file, id, count] = process.argv.slice(2);
const log = createLogger({ svc: 'child', level: 'silent' });
const n = Number(count ?? '0');

if (mode === 'bump') {
  const store = new FileAlarms(file as string, log, { lockWaitMs: 60_000 });
  let done = 0;
  for (let i = 0; i < n; i++) {
    const r = await store.mutate(id as string, (a) => ({ ...a, value: (a.value ?? 0) + 1 }));
    if (r?.changed) done++;
  }
  console.log(JSON.stringify({ done }));
} else if (mode === 'read') {
  let torn = 0;
  let reads = 0;
  for (let i = 0; i < n; i++) {
    const text = await readFile(file as string, 'utf8');
    reads++;
    try {
      JSON.parse(text);
    } catch {
      torn++;
    }
  }
  console.log(JSON.stringify({ reads, torn }));
} else if (mode === 'hold') {
  const store = new FileAlarms(file as string, log);
  // a mutate whose function never returns keeps the lock: the process is killed while holding it
  void store.mutate(id as string, () => {
    console.log(JSON.stringify({ locked: true }));
    const end = Date.now() + 60_000;
    while (Date.now() < end) { /* hold the lock, synchronously, until killed */ }
    return null;
  });
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
