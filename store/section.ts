/**
 * One section of the runtime config (`prompts.*`, `ldap.*`) as a repository of its own, kept
 * where every override is (cortado_config_overrides, one row per `<section>.<name>` key).
 *
 * Why not tables of their own: these settings are config keys. Each change is applied by every
 * process (the `config.changed` event), belongs in the one override history the admin panel
 * shows, and existing deployments already keep them as override rows; a table per section
 * would split the history and need a second way to reach other processes. So the section's
 * memory and PostgreSQL implementations are the overrides' own, seen through its prefix.
 */
import { CortadoError } from '../protocol/errors.js';
import type { OverridesRepository } from './overrides.js';

/** One setting of a section with a stored value. */
export interface StoredSetting<V> {
  /** the key within the section (`sql_generation` for `prompts.sql_generation`) */
  name: string;
  value: V;
  updated_by: string;
  updated_at: string;
}

export interface SectionRepository<V> {
  /** the settings of this section with a stored value, by name */
  list(): Promise<Array<StoredSetting<V>>>;
  /** set (or replace) one setting, recorded in the override history; the previous value if any */
  set(name: string, value: V, by: string): Promise<{ previous?: V }>;
  /** back to the file's value, recorded in the history; false when nothing was stored */
  reset(name: string, by: string): Promise<boolean>;
}

const NAME = /^[a-z][a-z0-9_]*$/;

export class OverrideSection<V> implements SectionRepository<V> {
  /**
   * @param accepts the values this section keeps: set() refuses others (VALIDATION_FAILED),
   *   list() passes over a stored row that is not one (it cannot be applied either)
   */
  constructor(
    private readonly overrides: OverridesRepository,
    readonly section: string,
    private readonly accepts: (value: unknown) => value is V,
    private readonly what: string,
  ) {}

  private key(name: string): string {
    if (!NAME.test(name)) throw new CortadoError('VALIDATION_FAILED', `${this.section}: "${name.slice(0, 64)}" is not a setting name (lowercase letters, digits and _)`);
    return `${this.section}.${name}`;
  }

  async list(): Promise<Array<StoredSetting<V>>> {
    const prefix = `${this.section}.`;
    const out: Array<StoredSetting<V>> = [];
    for (const o of await this.overrides.list()) {
      const name = o.key.slice(prefix.length);
      if (!o.key.startsWith(prefix) || !NAME.test(name) || !this.accepts(o.value)) continue;
      out.push({ name, value: o.value, updated_by: o.updated_by, updated_at: o.updated_at });
    }
    return out;
  }

  async set(name: string, value: V, by: string): Promise<{ previous?: V }> {
    const key = this.key(name);
    if (!this.accepts(value)) throw new CortadoError('VALIDATION_FAILED', `${key}: ${this.what}`);
    const { previous } = await this.overrides.set(key, value, by);
    return previous !== undefined && this.accepts(previous) ? { previous } : {};
  }

  async reset(name: string, by: string): Promise<boolean> {
    return this.overrides.delete(this.key(name), by);
  }
}
