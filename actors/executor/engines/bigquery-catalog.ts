/** BigQuery catalog queries: the tables, views and columns of a dataset (or of the project in a region), with their descriptions. */

import type { Cell } from '../../../protocol/schemas/common.js';

export const INTROSPECT_TABLES = (scope: string): string => `
SELECT t.table_schema, t.table_name, t.table_type, o.option_value AS description
FROM ${scope}.INFORMATION_SCHEMA.TABLES AS t
LEFT JOIN ${scope}.INFORMATION_SCHEMA.TABLE_OPTIONS AS o
  ON o.table_schema = t.table_schema AND o.table_name = t.table_name AND o.option_name = 'description'
ORDER BY t.table_schema, t.table_name`;

export const INTROSPECT_COLUMNS = (scope: string): string => `
SELECT c.table_schema, c.table_name, c.column_name, c.is_nullable, c.data_type, p.description
FROM ${scope}.INFORMATION_SCHEMA.COLUMNS AS c
LEFT JOIN ${scope}.INFORMATION_SCHEMA.COLUMN_FIELD_PATHS AS p
  ON p.table_schema = c.table_schema AND p.table_name = c.table_name AND p.column_name = c.column_name AND p.field_path = c.column_name
ORDER BY c.table_schema, c.table_name, c.ordinal_position`;

/** TABLE_OPTIONS values are GoogleSQL literals: `"one row per order"` → one row per order. */
export function optionText(v: Cell | undefined): string | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  if (v.startsWith('"') && v.endsWith('"')) {
    try {
      return JSON.parse(v) as string;
    } catch {
      return v.slice(1, -1);
    }
  }
  return v;
}
