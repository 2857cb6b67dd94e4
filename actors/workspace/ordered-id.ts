/**
 * Ids that sort in the order they were made (the UUID version 7 layout: 48 bits of Unix
 * milliseconds, then a counter, then random bits), so that two history entries made in the same
 * millisecond keep their order when the store sorts by time and then by id. Within one process
 * the ids only grow, even if the wall clock steps back; across processes, entries of the same
 * millisecond are ordered arbitrarily, as they were made concurrently.
 */
import { randomBytes } from 'node:crypto';

let lastMs = 0;
let counter = 0;

export function orderedId(now: number = Date.now()): string {
  let ms = Math.max(Math.floor(now), lastMs);
  if (ms === lastMs) {
    counter++;
    if (counter > 0xfff) { ms++; counter = 0; } // 4,096 in one millisecond: borrow the next one
  } else {
    counter = 0;
  }
  lastMs = ms;
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
