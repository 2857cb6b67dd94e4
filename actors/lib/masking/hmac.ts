/**
 * HMAC-SHA256 of many short texts under one key, in JavaScript: `createHmac` costs several
 * microseconds per call in object set-up alone, which for a 10,000 × 20 result is seconds.
 * Here the key's inner and outer pad blocks are compressed once, so a text of up to 55 bytes
 * costs two block compressions and no allocation. The output is checked against node:crypto's
 * createHmac in the tests (random keys, texts of every length around the block boundaries,
 * non-ASCII text).
 *
 * SHA-256 as in FIPS 180-4; HMAC as in RFC 2104 (a key longer than the block is hashed first).
 */
import { createHash } from 'node:crypto';

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

const W = new Int32Array(64);

/** One SHA-256 block (64 bytes of `block` from `at`) into `state`. */
function compress(state: Int32Array, block: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++) {
    const j = at + i * 4;
    W[i] = (block[j]! << 24) | (block[j + 1]! << 16) | (block[j + 2]! << 8) | block[j + 3]!;
  }
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15]!;
    const y = W[i - 2]!;
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0;
  }
  let a = state[0]!, b = state[1]!, c = state[2]!, d = state[3]!, e = state[4]!, f = state[5]!, g = state[6]!, h = state[7]!;
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (h + S1 + ch + K[i]! + W[i]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0]! + a) | 0;
  state[1] = (state[1]! + b) | 0;
  state[2] = (state[2]! + c) | 0;
  state[3] = (state[3]! + d) | 0;
  state[4] = (state[4]! + e) | 0;
  state[5] = (state[5]! + f) | 0;
  state[6] = (state[6]! + g) | 0;
  state[7] = (state[7]! + h) | 0;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function wordHex(w: number): string {
  return HEX[(w >>> 24) & 0xff]! + HEX[(w >>> 16) & 0xff]! + HEX[(w >>> 8) & 0xff]! + HEX[w & 0xff]!;
}

const encoder = new TextEncoder();

export interface Hmac {
  /** HMAC-SHA256(key, UTF-8 text) as hex, the first `hexDigits` (even, 2 to 64) digits */
  hex(text: string, hexDigits?: number): string;
}

export function createFastHmac(key: Uint8Array): Hmac {
  const k = key.length > 64 ? new Uint8Array(createHash('sha256').update(key).digest()) : key;
  const pad = new Uint8Array(64);
  const inner = new Int32Array(IV);
  const outer = new Int32Array(IV);
  for (let i = 0; i < 64; i++) pad[i] = (k[i] ?? 0) ^ 0x36;
  compress(inner, pad, 0);
  for (let i = 0; i < 64; i++) pad[i] = (k[i] ?? 0) ^ 0x5c;
  compress(outer, pad, 0);

  let buf = new Uint8Array(256);
  const state = new Int32Array(8);
  const last = new Uint8Array(64);

  return {
    hex(text, hexDigits = 64) {
      // the text's bytes, then 0x80, zeros, and the bit length of (pad block + text)
      let n = text.length;
      let ascii = true;
      for (let i = 0; i < n; i++) if (text.charCodeAt(i) > 0x7f) { ascii = false; break; }
      if (!ascii || n + 72 > buf.length) {
        const bytes = ascii ? undefined : encoder.encode(text);
        const len = bytes ? bytes.length : n;
        if (len + 72 > buf.length) buf = new Uint8Array((len + 72) * 2);
        if (bytes) buf.set(bytes);
        n = len;
      }
      if (ascii) for (let i = 0; i < n; i++) buf[i] = text.charCodeAt(i);
      const total = Math.ceil((n + 9) / 64) * 64;
      buf[n] = 0x80;
      buf.fill(0, n + 1, total - 8);
      const bits = (n + 64) * 8;
      // lengths here stay far below 2^32 bits
      buf[total - 8] = 0; buf[total - 7] = 0; buf[total - 6] = 0; buf[total - 5] = 0;
      buf[total - 4] = (bits >>> 24) & 0xff; buf[total - 3] = (bits >>> 16) & 0xff; buf[total - 2] = (bits >>> 8) & 0xff; buf[total - 1] = bits & 0xff;
      state.set(inner);
      for (let at = 0; at < total; at += 64) compress(state, buf, at);
      // outer: pad block (done) + the 32-byte inner digest + padding, one block
      for (let i = 0; i < 8; i++) {
        const w = state[i]!;
        last[i * 4] = w >>> 24; last[i * 4 + 1] = (w >>> 16) & 0xff; last[i * 4 + 2] = (w >>> 8) & 0xff; last[i * 4 + 3] = w & 0xff;
      }
      last[32] = 0x80;
      last.fill(0, 33, 62);
      last[62] = ((64 + 32) * 8) >>> 8;
      last[63] = ((64 + 32) * 8) & 0xff;
      state.set(outer);
      compress(state, last, 0);
      let out = '';
      for (let i = 0; i * 8 < hexDigits; i++) out += wordHex(state[i]!);
      return out.slice(0, hexDigits);
    },
  };
}
