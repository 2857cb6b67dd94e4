/** Values every engine shares. */

import type { Cell } from '../../../protocol/schemas/common.js';

/**
 * A number when the JSON number means exactly the decimal the server sent, else the text.
 * Up to 15 significant digits a decimal survives the trip through a double (within the normal
 * range); integers beyond that only when they are safe integers.
 */
export function exactNumber(text: string): Cell {
  const m = /^-?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) return text; // NaN, Infinity
  const n = Number(text);
  if (!Number.isFinite(n)) return text;
  const intPart = m[1] ?? '';
  const fraction = (m[2] ?? '').replace(/0+$/, '');
  if (fraction === '' && Number.isSafeInteger(n)) return n;
  const significant = `${intPart}${fraction}`.replace(/^0+/, '').replace(/0+$/, '');
  if (significant === '') return 0;
  if (significant.length > 15) return text;
  if (n === 0 || Math.abs(n) < 1e-300) return text; // underflow
  return n;
}
