/**
 * The schema text the model reads: one block per table, its columns, comments and foreign keys.
 * All of it comes from the database, so it is fenced as data (lib/model-io/prompting.ts fence), and each
 * name, type, comment and value is kept on its line (inline: no line break, control character
 * or fence marker; comments and values capped).
 */
import type { DbTable } from '../../protocol/schemas/sql.js';
import { DIALECT_NAMES, fence, inline } from '../lib/model-io/prompting.js';
import { type Catalog, type CatalogEntry, displayName } from './catalog.js';

/** Characters of a table or column comment shown, at most. */
const COMMENT_CHARS = 300;
/** Characters of a known value shown, at most. */
const VALUE_CHARS = 100;

function oneLine(text: string, max = COMMENT_CHARS): string {
  return inline(text, max);
}

function fkTarget(catalog: Pick<Catalog, 'defaultSchema'>, fk: NonNullable<DbTable['foreign_keys']>[number]): string {
  return inline(displayName({ schema: fk.ref_schema, name: fk.ref_table }, catalog.defaultSchema));
}

/** Known values of some columns (value linking: the values that matched the question's literals), by column. */
export type ColumnValues = ReadonlyMap<string, readonly string[]>;

/** A value as SQL writes it: single-quoted, quotes doubled, on one line. */
function quoted(value: string): string {
  return `'${oneLine(value, VALUE_CHARS).replace(/'/g, "''")}'`;
}

/** One table as prompt text: header, one line per column, composite foreign keys last. */
export function renderTable(entry: Pick<CatalogEntry, 'name' | 'table'>, defaultSchema: string, values?: ColumnValues): string {
  const t = entry.table;
  let head = `${t.kind === 'view' ? 'View' : 'Table'} ${inline(entry.name)}`;
  if (t.row_estimate !== undefined && t.row_estimate >= 0) head += ` (~${Math.round(t.row_estimate)} rows)`;
  if (t.comment && oneLine(t.comment)) head += ` -- ${oneLine(t.comment)}`;
  const lines = [head];
  const single = new Map<string, string>();
  const composite: string[] = [];
  for (const fk of t.foreign_keys ?? []) {
    const target = fkTarget({ defaultSchema }, fk);
    const [col] = fk.columns;
    const [ref] = fk.ref_columns;
    if (fk.columns.length === 1 && col !== undefined && ref !== undefined) {
      if (!single.has(col)) single.set(col, `${target}.${inline(ref)}`);
    } else {
      composite.push(`  FOREIGN KEY (${fk.columns.map((c) => inline(c)).join(', ')}) -> ${target} (${fk.ref_columns.map((c) => inline(c)).join(', ')})`);
    }
  }
  for (const c of t.columns) {
    let line = `  ${inline(c.name)} ${inline(c.type)}`;
    if (!c.nullable) line += ' NOT NULL';
    const ref = single.get(c.name);
    if (ref !== undefined) line += ` -> ${ref}`;
    if (c.comment && oneLine(c.comment)) line += ` -- ${oneLine(c.comment)}`;
    const known = values?.get(c.name);
    if (known?.length) line += `${c.comment && oneLine(c.comment) ? ';' : ' --'} holds ${known.map(quoted).join(', ')}`;
    lines.push(line);
  }
  lines.push(...composite);
  return lines.join('\n');
}

/** The prompt's schema block: the dialect, then each named table (in the order given) in one fence, with the known values of `values` beside their columns. */
export function renderSchemaText(catalog: Catalog, names: readonly string[], values?: ReadonlyMap<string, ColumnValues>): string {
  const byName = new Map(catalog.entries.map((e) => [e.name, e]));
  const blocks: string[] = [];
  for (const name of names) {
    const e = byName.get(name);
    if (e) blocks.push(renderTable(e, catalog.defaultSchema, values?.get(name)));
  }
  const dialect = `Dialect: ${DIALECT_NAMES[catalog.dialect]}`;
  return blocks.length ? `${dialect}\n\n${fence('schema', blocks.join('\n\n'))}` : dialect;
}
