/**
 * Fernet (https://github.com/fernet/spec, version 0x80) with node:crypto, so that keys and
 * tokens made by Python's `cryptography` work here and the other way round.
 *
 *   key   = base64url(signing key 16 B ‖ encryption key 16 B), 44 characters with padding
 *   token = base64url(0x80 ‖ timestamp u64 BE ‖ IV 16 B ‖ AES-128-CBC/PKCS7 ciphertext ‖ HMAC 32 B)
 *   HMAC  = HMAC-SHA256(signing key, everything before it)
 *
 * Tokens are written with `=` padding, as `cryptography` writes them; reading accepts them with
 * or without it, and nothing else (no standard-alphabet characters, no trailing data).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { CortadoError } from '../../../protocol/errors.js';

const VERSION = 0x80;
const HEADER_BYTES = 1 + 8 + 16;
const HMAC_BYTES = 32;
const BLOCK = 16;
/** the smallest token: header, one cipher block (PKCS7 always adds one), HMAC */
const MIN_TOKEN_BYTES = HEADER_BYTES + BLOCK + HMAC_BYTES;
/** how far in the future a token's timestamp may be when a TTL is checked (as `cryptography`) */
const MAX_CLOCK_SKEW_SECONDS = 60;

/** Where a key comes from, for error messages (never the key itself). */
const KEY_SETTING = 'config_db.encryption_key';

export type InvalidTokenReason = 'malformed' | 'version' | 'signature' | 'expired' | 'future' | 'decryption';

/** A token that is not a valid Fernet token for this key (the reason is for logs and tests). */
export class InvalidFernetToken extends Error {
  override readonly name = 'InvalidFernetToken';
  readonly reason: InvalidTokenReason;

  constructor(reason: InvalidTokenReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** A new random key, in the form Python's `Fernet.generate_key()` prints. */
export function generateFernetKey(): string {
  return randomBytes(32).toString('base64url') + '=';
}

/** Strict base64url: the url-safe alphabet, optional `=` padding that fits the length, nothing more. */
function decodeBase64Url(text: string): Buffer | undefined {
  const m = /^([A-Za-z0-9_-]*)(={0,2})$/.exec(text);
  if (!m) return undefined;
  const body = m[1] ?? '';
  const pad = m[2] ?? '';
  if (body.length % 4 === 1) return undefined;
  if (pad.length > 0 && (body.length + pad.length) % 4 !== 0) return undefined;
  const bytes = Buffer.from(body, 'base64url');
  // unused low bits in the last character must be zero (one encoding per byte string)
  if (bytes.toString('base64url') !== body) return undefined;
  return bytes;
}

function encodeBase64Url(bytes: Buffer): string {
  const body = bytes.toString('base64url');
  return body + '='.repeat((4 - (body.length % 4)) % 4);
}

export interface EncryptOptions {
  /** the token's timestamp, in milliseconds since the epoch (default: now) */
  now?: number;
  /** the 16-byte IV (default: random); only tests should set it */
  iv?: Buffer;
}

export interface DecryptOptions {
  /** refuse tokens older than this (and tokens from more than 60 s in the future) */
  ttlSeconds?: number;
  /** the current time, in milliseconds since the epoch (default: now) */
  now?: number;
}

export class Fernet {
  readonly #signingKey: Buffer;
  readonly #encryptionKey: Buffer;

  /** @param key a Fernet key: 32 bytes, url-safe base64 (as `Fernet.generate_key()` makes) */
  constructor(key: string) {
    const bytes = typeof key === 'string' ? decodeBase64Url(key.trim()) : undefined;
    if (!bytes || bytes.length !== 32) {
      throw new CortadoError('CONFIG_INVALID', `${KEY_SETTING} is not a Fernet key: it must be 32 bytes in url-safe base64 (44 characters, as Python's Fernet.generate_key() prints)`);
    }
    this.#signingKey = bytes.subarray(0, 16);
    this.#encryptionKey = bytes.subarray(16, 32);
  }

  encrypt(plain: string | Buffer, opts: EncryptOptions = {}): string {
    const data = typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain;
    const iv = opts.iv ?? randomBytes(16);
    if (iv.length !== 16) throw new RangeError('the Fernet IV must be 16 bytes');
    const seconds = Math.floor((opts.now ?? Date.now()) / 1000);
    if (!Number.isSafeInteger(seconds) || seconds < 0) throw new RangeError('the Fernet timestamp must be a time after 1970');

    const cipher = createCipheriv('aes-128-cbc', this.#encryptionKey, iv); // PKCS7 padding is the default
    const ciphertext = Buffer.concat([cipher.update(data), cipher.final()]);
    const header = Buffer.alloc(HEADER_BYTES);
    header[0] = VERSION;
    header.writeBigUInt64BE(BigInt(seconds), 1);
    iv.copy(header, 9);
    const signed = Buffer.concat([header, ciphertext]);
    const mac = createHmac('sha256', this.#signingKey).update(signed).digest();
    return encodeBase64Url(Buffer.concat([signed, mac]));
  }

  /** The plaintext bytes; throws InvalidFernetToken for anything that is not a valid, unexpired token for this key. */
  decrypt(token: string, opts: DecryptOptions = {}): Buffer {
    const bytes = typeof token === 'string' ? decodeBase64Url(token) : undefined;
    if (!bytes) throw new InvalidFernetToken('malformed', 'the Fernet token is not url-safe base64');
    if (bytes.length < MIN_TOKEN_BYTES || (bytes.length - HEADER_BYTES - HMAC_BYTES) % BLOCK !== 0) {
      throw new InvalidFernetToken('malformed', 'the Fernet token has the wrong length');
    }
    if (bytes[0] !== VERSION) throw new InvalidFernetToken('version', 'the Fernet token has an unknown version');

    const timestamp = bytes.readBigUInt64BE(1);
    if (opts.ttlSeconds !== undefined) {
      const now = BigInt(Math.floor((opts.now ?? Date.now()) / 1000));
      if (timestamp + BigInt(Math.floor(opts.ttlSeconds)) < now) throw new InvalidFernetToken('expired', 'the Fernet token has expired');
      if (now + BigInt(MAX_CLOCK_SKEW_SECONDS) < timestamp) throw new InvalidFernetToken('future', 'the Fernet token was made in the future (clock skew)');
    }

    const signedEnd = bytes.length - HMAC_BYTES;
    const expected = createHmac('sha256', this.#signingKey).update(bytes.subarray(0, signedEnd)).digest();
    if (!timingSafeEqual(expected, bytes.subarray(signedEnd))) {
      throw new InvalidFernetToken('signature', 'the Fernet token does not match the key (wrong key or altered token)');
    }

    const iv = bytes.subarray(9, HEADER_BYTES);
    try {
      const decipher = createDecipheriv('aes-128-cbc', this.#encryptionKey, iv);
      return Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES, signedEnd)), decipher.final()]);
    } catch {
      throw new InvalidFernetToken('decryption', 'the Fernet token does not decrypt (bad padding)');
    }
  }
}
