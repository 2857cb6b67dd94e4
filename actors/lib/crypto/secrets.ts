/**
 * Secrets at rest: what config_db stores for a password, an API key or a token is a Fernet token
 * under `config_db.encryption_key`, wrapped as `{ "enc": "<token>" }` so a reader can tell it
 * from plain text. Without a key, Cortado refuses to store a secret (it never makes up a key:
 * one that is lost on restart would make every stored secret unreadable).
 *
 * Which values are secret is decided by key name (SECRET_KEYS in config/schema.ts), both for a
 * dotted config path (`ldap.bind_password`) and for the fields of a db_config object.
 *
 * Shared library code: the identity actor seals (the db_config of auth sessions and API
 * tokens), the settings actor seals stored config secrets, the executor opens the db_config of
 * a scope with its own box.
 */
import { CortadoError } from '../../../protocol/errors.js';
import { SECRET_KEYS } from '../../../config/schema.js';
import { Fernet, InvalidFernetToken } from './fernet.js';

/** A secret as stored. `json: true`: the plaintext is the JSON of a non-string value. */
export interface Sealed {
  enc: string;
  json?: true;
}

export interface SecretBox {
  /** false when config_db.encryption_key is empty (seal and open then throw) */
  readonly enabled: boolean;
  /** encrypt one secret; throws CONFIG_INVALID when no key is configured */
  seal(value: string): Sealed;
  /** decrypt one stored secret; throws CONFIG_INVALID when no key is configured or the key does not fit */
  open(sealed: Sealed): string;
  isSealed(value: unknown): value is Sealed;
  /**
   * A copy of `obj` (a db_config, a config section) with every non-empty secret field sealed,
   * at any depth; fields already sealed stay as they are. Empty secrets ('' or null) stay empty,
   * so a config without secrets needs no key.
   */
  sealSecretsIn<T>(obj: T): T;
  /** The reverse of sealSecretsIn: a copy with every sealed field opened. */
  openSecretsIn<T>(obj: T): T;
  /** seal the value of one config key (dotted path): the whole value when the key is a secret, else its secret fields */
  sealForKey(key: string, value: unknown): unknown;
  openForKey(key: string, value: unknown): unknown;
}

const KEY_SETTING = 'config_db.encryption_key';

/**
 * Objects and arrays inside each other that a walk goes through, at most: a db_config or a
 * config section is a few levels deep; a value nested thousands deep (a hostile admin body)
 * is refused with VALIDATION_FAILED instead of exhausting the stack.
 */
export const MAX_WALK_DEPTH = 64;

/** true when the last segment of a dotted config path names a secret (`ldap.bind_password`). */
export function isSecretKey(path: string): boolean {
  const last = path.split('.').pop() ?? '';
  return SECRET_KEYS.has(last);
}

export function isSealed(value: unknown): value is Sealed {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  const v = value as Record<string, unknown>;
  return typeof v.enc === 'string' && keys.every((k) => k === 'enc' || (k === 'json' && v.json === true));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isEmptySecret(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

export function createSecretBox(config: { config_db: { encryption_key: string } }): SecretBox {
  const key = (config.config_db.encryption_key ?? '').trim();
  // an invalid key fails here, at start-up (CONFIG_INVALID naming the setting, never the key)
  const fernet = key ? new Fernet(key) : undefined;

  function need(action: string): Fernet {
    if (!fernet) {
      throw new CortadoError('CONFIG_INVALID', `${KEY_SETTING} is not set: Cortado refuses to ${action}`);
    }
    return fernet;
  }

  function seal(value: string): Sealed {
    if (typeof value !== 'string') throw new TypeError('seal() takes a string');
    return { enc: need('store secrets').encrypt(value) };
  }

  function open(sealed: Sealed): string {
    if (!isSealed(sealed)) throw new TypeError('open() takes a sealed value ({ enc })');
    const f = need('read stored secrets');
    try {
      return f.decrypt(sealed.enc).toString('utf8');
    } catch (err) {
      if (err instanceof InvalidFernetToken) {
        throw new CortadoError('CONFIG_INVALID', `a stored secret cannot be decrypted with ${KEY_SETTING} (was the key changed, or the value altered?)`, { reason: err.reason });
      }
      throw err;
    }
  }

  function sealSecret(value: unknown): unknown {
    if (isEmptySecret(value) || isSealed(value)) return value;
    if (typeof value === 'string') return seal(value);
    return { ...seal(JSON.stringify(value)), json: true } satisfies Sealed;
  }

  function openSecret(value: unknown): unknown {
    if (!isSealed(value)) return value;
    const plain = open(value);
    return value.json ? (JSON.parse(plain) as unknown) : plain;
  }

  function walk(value: unknown, onSecret: (v: unknown) => unknown, depth = 0): unknown {
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_WALK_DEPTH) {
      throw new CortadoError('VALIDATION_FAILED', `the value nests objects and arrays more than ${MAX_WALK_DEPTH} levels deep`);
    }
    if (Array.isArray(value)) return value.map((v) => walk(v, onSecret, depth + 1));
    if (!isPlainObject(value) || isSealed(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty: a field named __proto__ stays a field, never the copy's prototype
      Object.defineProperty(out, k, { value: SECRET_KEYS.has(k) ? onSecret(v) : walk(v, onSecret, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }

  return {
    enabled: fernet !== undefined,
    seal,
    open,
    isSealed,
    sealSecretsIn: <T>(obj: T): T => walk(obj, sealSecret) as T,
    openSecretsIn: <T>(obj: T): T => walk(obj, openSecret) as T,
    sealForKey: (path, value) => (isSecretKey(path) ? sealSecret(value) : walk(value, sealSecret)),
    openForKey: (path, value) => (isSecretKey(path) ? openSecret(value) : walk(value, openSecret)),
  };
}

/**
 * Seal something for an admin's request: without config_db.encryption_key that is refused, and
 * the admin who asked hears why as a 409 (CONFIG_INVALID would be an opaque 500 on the wire).
 */
export function sealForRequest<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    if (err instanceof CortadoError && err.code === 'CONFIG_INVALID') throw new CortadoError('CONFLICT', err.message);
    throw err;
  }
}
