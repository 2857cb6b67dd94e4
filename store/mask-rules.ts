/**
 * Column mask rules (owner: the settings actor; the masking and alerts actors ask it for them
 * over the bus). Validation of a pattern is the caller's; the repository keeps what it is given.
 */
import { randomUUID } from 'node:crypto';
import { clean, iso, optText, type PgDatabase } from './postgres.js';
import { copy } from './values.js';

export type MaskStrategy = 'hash' | 'partial' | 'redact';

export interface MaskRule {
  id: string;
  /** a glob over column names, case-insensitive (`*email*`, `ssn`, `card_*`) */
  field_pattern: string;
  strategy: MaskStrategy;
  enabled: boolean;
  description: string;
  created_at: string;
  updated_at: string;
}

export type MaskRuleInput = Pick<MaskRule, 'field_pattern' | 'strategy'> & Partial<Pick<MaskRule, 'enabled' | 'description'>>;

export interface MaskRulesRepository {
  /** in creation order */
  list(): Promise<MaskRule[]>;
  create(input: MaskRuleInput): Promise<MaskRule>;
  /** undefined when there is no such rule */
  update(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined>;
  delete(id: string): Promise<boolean>;
}

// ---- memory -----------------------------------------------------------------------------------

export class MemoryMaskRules implements MaskRulesRepository {
  /** a Map keeps insertion order: creation order */
  private readonly byId = new Map<string, MaskRule>();

  async list(): Promise<MaskRule[]> {
    return [...this.byId.values()].map(copy);
  }

  async create(input: MaskRuleInput): Promise<MaskRule> {
    const at = new Date().toISOString();
    const rule: MaskRule = {
      id: randomUUID(),
      field_pattern: input.field_pattern,
      strategy: input.strategy,
      enabled: input.enabled ?? true,
      description: input.description ?? '',
      created_at: at,
      updated_at: at,
    };
    this.byId.set(rule.id, rule);
    return copy(rule);
  }

  async update(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined> {
    const rule = this.byId.get(id);
    if (!rule) return undefined;
    if (patch.field_pattern !== undefined) rule.field_pattern = patch.field_pattern;
    if (patch.strategy !== undefined) rule.strategy = patch.strategy;
    if (patch.enabled !== undefined) rule.enabled = patch.enabled;
    if (patch.description !== undefined) rule.description = patch.description;
    rule.updated_at = new Date().toISOString();
    return copy(rule);
  }

  async delete(id: string): Promise<boolean> {
    return this.byId.delete(id);
  }
}

// ---- PostgreSQL (cortado_mask_rules) ------------------------------------------------------------

interface Row {
  id: string;
  field_pattern: string;
  strategy: MaskStrategy;
  enabled: boolean;
  description: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, field_pattern, strategy, enabled, description, created_at, updated_at';

function fromRow(r: Row): MaskRule {
  return {
    id: r.id, field_pattern: r.field_pattern, strategy: r.strategy, enabled: r.enabled, description: r.description,
    created_at: iso(r.created_at), updated_at: iso(r.updated_at),
  };
}

export class PostgresMaskRules implements MaskRulesRepository {
  constructor(private readonly db: PgDatabase) {}

  async list(): Promise<MaskRule[]> {
    const r = await this.db.query<Row>(`SELECT ${COLUMNS} FROM cortado_mask_rules ORDER BY seq`);
    return r.rows.map(fromRow);
  }

  async create(input: MaskRuleInput): Promise<MaskRule> {
    const at = new Date().toISOString();
    const r = await this.db.query<Row>(
      `INSERT INTO cortado_mask_rules (id, field_pattern, strategy, enabled, description, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${COLUMNS}`,
      [randomUUID(), clean(input.field_pattern), input.strategy, input.enabled ?? true, clean(input.description ?? ''), at]);
    return fromRow(r.rows[0] as Row);
  }

  async update(id: string, patch: Partial<MaskRuleInput>): Promise<MaskRule | undefined> {
    const r = await this.db.query<Row>(
      `UPDATE cortado_mask_rules SET
         field_pattern = COALESCE($2, field_pattern), strategy = COALESCE($3, strategy),
         enabled = COALESCE($4, enabled), description = COALESCE($5, description), updated_at = $6
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, optText(patch.field_pattern), patch.strategy ?? null, patch.enabled ?? null, optText(patch.description), new Date().toISOString()]);
    return r.rows[0] && fromRow(r.rows[0]);
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.db.query('DELETE FROM cortado_mask_rules WHERE id = $1', [id]);
    return (r.rowCount ?? 0) > 0;
  }
}
