/**
 * PostgreSQL statements that create a benchmark database from the compact representation
 * (model.ts): schemas and their comments, enum and domain types, tables with their primary keys,
 * partitioned tables with their partitions, comments on tables and columns, the sample rows,
 * rows copied from a real table into its landing copies, then the foreign keys (on the table, or on
 * its partitions where the source declares them there), then the views.
 *
 * Foreign keys are declared NOT VALID: the sample rows are a handful per table and do not satisfy
 * every reference; PostgreSQL records the constraint all the same (pg_constraint), and that is what
 * an introspection reads.
 */
import { parseColumn, parseForeignKey, type RealRows, type RealSchema, type RealTable, type RealType, type RealView } from './model.js';

/** Rows a landing copy takes from its real table: `INSERT INTO into (columns) SELECT exprs FROM from`. */
export interface RowCopy {
  into: string;
  from: string;
  columns: string[];
  exprs: string[];
}

export interface DatabasePlan {
  schemas: RealSchema[];
  rows: RealRows[];
  copies?: RowCopy[];
}

export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;
const rel = (schema: string, name: string): string => `${ident(schema)}.${ident(name)}`;
const qualified = (dotted: string): string => {
  const at = dotted.indexOf('.');
  return rel(dotted.slice(0, at), dotted.slice(at + 1));
};
export const literal = (v: string | number | boolean | null): string => {
  if (v === null) return 'NULL';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'NULL';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return `'${v.replaceAll("'", "''")}'`;
};

/** `public."Name"` / `dvdrental.year` → the key of the type in the plan, `public.Name`. */
function typeKey(type: string): string {
  return type.replaceAll('"', '');
}

/** A value of the column's type for a NOT NULL column a sample row leaves out (row `i`, distinct per row for keys). */
export function filler(type: string, i: number, types: ReadonlyMap<string, RealType>): string {
  const own = types.get(typeKey(type));
  if (own?.enum) return `${literal(own.enum[0]!)}::${type}`;
  if (own?.domain) return `(${filler(own.domain.replace(/\s+(NOT NULL|CHECK)\b.*$/i, ''), i, types)})::${type}`;
  const t = type.toLowerCase();
  const n = i + 1;
  if (t.endsWith('[]')) return `'{}'`;
  if (/^(smallint|integer|bigint|int|numeric|decimal|real|double precision)\b/.test(t)) return String(n);
  const len = /^(?:character varying|character|varchar|char)\((\d+)\)/.exec(t);
  if (len) return literal(String(n).slice(-Number(len[1])));
  if (/^(text|character varying|character|name)\b/.test(t)) return literal(String(n));
  if (t === 'boolean') return 'false';
  if (t === 'date') return `'2022-01-01'`;
  if (t.startsWith('timestamp')) return `'2022-01-01 00:00:00'`;
  if (t.startsWith('time')) return `'00:00:00'`;
  if (t === 'interval') return `'0'`;
  if (t === 'uuid') return `'00000000-0000-0000-0000-${String(n).padStart(12, '0')}'`;
  if (t === 'tsvector') return `''`;
  if (t === 'bytea') return `''`;
  if (t === 'json' || t === 'jsonb') return `'{}'`;
  if (t === 'point') return `'(0,0)'`;
  if (t === 'xml') return `''`;
  throw new Error(`no filler for type ${type}`);
}

function tableDdl(schema: string, t: RealTable, out: string[]): void {
  const cols = t.columns.map(parseColumn);
  const defs = cols.map((c) => `${ident(c.name)} ${c.type}${c.notNull ? ' NOT NULL' : ''}`);
  if (t.pk?.length) defs.push(`PRIMARY KEY (${t.pk.map(ident).join(', ')})`);
  const partitioned = t.partitions ? ` PARTITION BY ${t.partitions.by}` : '';
  out.push(`CREATE TABLE ${rel(schema, t.name)} (${defs.join(', ')})${partitioned}`);
  for (const p of t.partitions?.parts ?? []) out.push(`CREATE TABLE ${rel(schema, p.name)} PARTITION OF ${rel(schema, t.name)} FOR VALUES ${p.bound}`);
  if (t.comment) out.push(`COMMENT ON TABLE ${rel(schema, t.name)} IS ${literal(t.comment)}`);
  for (const c of cols) if (c.comment) out.push(`COMMENT ON COLUMN ${rel(schema, t.name)}.${ident(c.name)} IS ${literal(c.comment)}`);
}

function foreignKeyDdl(schema: string, t: RealTable, out: string[]): void {
  const on = t.fks_on === 'partitions' ? (t.partitions?.parts ?? []).filter((p) => p.fks).map((p) => p.name) : [t.name];
  for (const spec of t.fks ?? []) {
    const fk = parseForeignKey(spec);
    for (const name of on) {
      out.push(`ALTER TABLE ${rel(schema, name)} ADD FOREIGN KEY (${fk.columns.map(ident).join(', ')}) REFERENCES ${rel(fk.ref_schema, fk.ref_table)} (${fk.ref_columns.map(ident).join(', ')}) NOT VALID`);
    }
  }
}

function viewDdl(schema: string, v: RealView, out: string[]): void {
  const name = rel(schema, v.name);
  if (v.shorthand) {
    const id = v.shorthand.id ? `${ident(v.shorthand.id)} AS id, ` : '';
    out.push(`CREATE VIEW ${name} AS SELECT ${id}* FROM ${qualified(v.shorthand.of)}`);
    if (v.comment) out.push(`COMMENT ON VIEW ${name} IS ${literal(v.comment)}`);
    return;
  }
  const cols = (v.columns ?? []).map(parseColumn);
  const kind = v.materialized ? 'MATERIALIZED VIEW' : 'VIEW';
  const body = v.sql ?? `SELECT ${cols.map((c) => `NULL::${c.type}`).join(', ')} WHERE false`;
  // without columns, the SELECT names them
  const names = cols.length ? ` (${cols.map((c) => ident(c.name)).join(', ')})` : '';
  out.push(`CREATE ${kind} ${name}${names} AS ${body}`);
  if (v.comment) out.push(`COMMENT ON ${kind} ${name} IS ${literal(v.comment)}`);
  for (const c of cols) if (c.comment) out.push(`COMMENT ON COLUMN ${name}.${ident(c.name)} IS ${literal(c.comment)}`);
}

function rowsDdl(rows: RealRows, table: RealTable | undefined, types: ReadonlyMap<string, RealType>, out: string[]): void {
  if (!table) throw new Error(`rows for ${rows.table}, a table the plan does not create`);
  const cols = table.columns.map(parseColumn);
  for (const c of rows.columns) if (!cols.some((x) => x.name === c)) throw new Error(`rows for ${rows.table}: no column ${c}`);
  const missing = cols.filter((c) => c.notNull && !rows.columns.includes(c.name));
  const names = [...rows.columns, ...missing.map((c) => c.name)];
  const values = rows.values.map((row, i) => {
    if (row.length !== rows.columns.length) throw new Error(`rows for ${rows.table}: row ${i} has ${row.length} values for ${rows.columns.length} columns`);
    const given = row.map((v, k) => {
      const type = cols.find((c) => c.name === rows.columns[k])!.type;
      return v === null ? 'NULL' : types.has(typeKey(type)) || /^(json|jsonb|point|interval|date|time|uuid)/.test(type) ? `${literal(v)}::${type}` : literal(v);
    });
    return `(${[...given, ...missing.map((c) => filler(c.type, i, types))].join(', ')})`;
  });
  out.push(`INSERT INTO ${qualified(rows.table)} (${names.map(ident).join(', ')}) VALUES ${values.join(', ')}`);
}

/** Every statement, in an order PostgreSQL accepts. */
export function databaseDdl(plan: DatabasePlan): string[] {
  const out: string[] = [];
  const types = new Map<string, RealType>();
  const tables = new Map<string, RealTable>();
  for (const s of plan.schemas) {
    for (const t of s.types ?? []) types.set(`${s.name}.${t.name}`, t);
    for (const t of s.tables) tables.set(`${s.name}.${t.name}`, t);
  }
  const created = new Set(['public']);
  for (const s of plan.schemas) {
    // a schema may come twice (the noise a real schema holds): created once
    if (!created.has(s.name)) out.push(`CREATE SCHEMA ${ident(s.name)}`);
    created.add(s.name);
    if (s.comment) out.push(`COMMENT ON SCHEMA ${ident(s.name)} IS ${literal(s.comment)}`);
    for (const t of s.types ?? []) {
      if (t.enum) out.push(`CREATE TYPE ${rel(s.name, t.name)} AS ENUM (${t.enum.map(literal).join(', ')})`);
      else if (t.domain) out.push(`CREATE DOMAIN ${rel(s.name, t.name)} AS ${t.domain}`);
    }
  }
  for (const s of plan.schemas) for (const t of s.tables) tableDdl(s.name, t, out);
  for (const r of plan.rows) rowsDdl(r, tables.get(r.table), types, out);
  for (const c of plan.copies ?? []) {
    out.push(`INSERT INTO ${qualified(c.into)} (${c.columns.map(ident).join(', ')}) SELECT ${c.exprs.join(', ')} FROM ${qualified(c.from)}`);
  }
  for (const s of plan.schemas) for (const t of s.tables) foreignKeyDdl(s.name, t, out);
  for (const s of plan.schemas) for (const v of s.views ?? []) viewDdl(s.name, v, out);
  return out;
}
