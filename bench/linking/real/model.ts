/**
 * The compact representation the real-schema benchmark keeps of each public sample database:
 * its structure transcribed (not its SQL files), so our own code writes the DDL
 * (bench/linking/real/ddl.ts).
 *
 * - a column is one string, close to how SQL writes it: `name type[ NOT NULL][ -- comment]`
 *   (`"Name"` quoted where the source quotes it; types as PostgreSQL's format_type() names them,
 *   qualified when they are the source's own: `dvdrental.mpaa_rating`, `public."Name"`);
 * - a foreign key is one string: `a, b -> schema.table(x, y)`;
 * - a partitioned table names its partitions; `fks: 'partitions'` declares the table's foreign keys
 *   on each partition that says `fks: true` (as the DVD store's payments do), not on the root;
 * - a view is its columns (same strings) and either our own SQL over the source's tables (`sql`)
 *   or nothing (`sql` absent: a view of those columns with no rows, for views whose source
 *   definition leans on XML or crosstab functions the benchmark does not need).
 */

export interface RealTable {
  name: string;
  comment?: string;
  columns: string[];
  pk?: string[];
  fks?: string[];
  /** where the foreign keys are declared: on the table (default) or on its partitions */
  fks_on?: 'table' | 'partitions';
  partitions?: { by: string; parts: Array<{ name: string; bound: string; fks?: boolean }> };
}

export interface RealView {
  name: string;
  comment?: string;
  /** materialized view */
  materialized?: boolean;
  /** absent for a shorthand view (its columns are its table's) and for a view whose SELECT names its columns */
  columns?: string[];
  /** our own SELECT (its columns named by `columns`, in order, when given); absent: an empty view of `columns` */
  sql?: string;
  /** AdventureWorks' convenience views: every column of `of`, after an `id` column copied from `id` when given */
  shorthand?: { of: string; id?: string };
}

export interface RealType {
  name: string;
  /** an enum's labels */
  enum?: string[];
  /** a domain's base type and constraint, as SQL */
  domain?: string;
}

export interface RealSchema {
  name: string;
  comment?: string;
  types?: RealType[];
  tables: RealTable[];
  views?: RealView[];
}

export interface Citation {
  repo: string;
  path: string;
  commit: string;
  note?: string;
}

export interface RealSource {
  /** short id, used by questions (`source`) */
  id: string;
  title: string;
  /** where the structure was transcribed from */
  citation: Citation[];
  schemas: RealSchema[];
}

/** A few rows for one table: the low-cardinality text people name in questions. */
export interface RealRows {
  /** `schema.table` */
  table: string;
  columns: string[];
  values: Array<Array<string | number | boolean | null>>;
}

export interface ParsedColumn {
  name: string;
  type: string;
  notNull: boolean;
  comment?: string;
}

/** `title character varying(160) NOT NULL -- the album's title` → its parts. */
export function parseColumn(spec: string): ParsedColumn {
  const at = spec.indexOf(' -- ');
  const head = (at >= 0 ? spec.slice(0, at) : spec).trim();
  const comment = at >= 0 ? spec.slice(at + 4).trim() : undefined;
  const notNull = / NOT NULL$/.test(head);
  const body = notNull ? head.slice(0, -' NOT NULL'.length) : head;
  const m = /^("(?:[^"]|"")+"|\S+)\s+(.+)$/.exec(body);
  if (!m) throw new Error(`a column needs a name and a type: ${spec}`);
  const raw = m[1]!;
  const name = raw.startsWith('"') ? raw.slice(1, -1).replaceAll('""', '"') : raw;
  const out: ParsedColumn = { name, type: m[2]!.trim(), notNull };
  if (comment) out.comment = comment;
  return out;
}

export interface ParsedForeignKey {
  columns: string[];
  ref_schema: string;
  ref_table: string;
  ref_columns: string[];
}

/** `a, b -> schema.table(x, y)` → its parts. */
export function parseForeignKey(spec: string): ParsedForeignKey {
  const m = /^(.+?)\s*->\s*([^.\s]+)\.([^(\s]+)\((.+)\)$/.exec(spec.trim());
  if (!m) throw new Error(`a foreign key reads 'cols -> schema.table(cols)': ${spec}`);
  const list = (s: string): string[] => s.split(',').map((x) => x.trim()).filter(Boolean);
  return { columns: list(m[1]!), ref_schema: m[2]!, ref_table: m[3]!, ref_columns: list(m[4]!) };
}
