/**
 * Masking, issue 24's classes at the unit level (the real servers run the same classes in
 * test/actors/attacks-masking-*.test.ts): whole-row references (A), names resolved as each
 * dialect's server resolves them (B), reads inside documents (C); the path reader, the rules'
 * reach into documents, and the walk of the documents a result returns.
 */
import t from 'tap';
import type { Dialect } from '../../protocol/schemas/common.js';
import type { MaskRuleLite } from '../../protocol/schemas/policy.js';
import { createLogger } from '../../runtime/log.js';
import { prepareParsers } from '../../actors/lib/masking/dialects.js';
import { mask, planMasks, UNKNOWN_LINEAGE_RULE } from '../../actors/lib/masking/mask.js';
import { INDEX, parseJsonPath, parsePgTextArray } from '../../actors/lib/masking/json.js';
import { compileRule, keyMatches, sourceMatches } from '../../actors/lib/masking/rules.js';
import { createHasher, REDACTED } from '../../actors/lib/masking/strategies.js';

await prepareParsers();
const U = UNKNOWN_LINEAGE_RULE;
const RULES: MaskRuleLite[] = [
  { field_pattern: 'customers.email', strategy: 'partial' },
  { field_pattern: 'ssn', strategy: 'hash' },
];

interface Case {
  name: string;
  sql: string;
  dialect?: Dialect;
  columns: string[];
  /** column → the rule reported; every other column stays unmasked */
  masked: Record<string, string>;
  rules?: MaskRuleLite[];
}

function run(t: { same(found: unknown, wanted: unknown, message: string): boolean }, cases: Case[]): void {
  for (const c of cases) {
    const plan = planMasks(c.sql, c.dialect ?? 'postgresql', c.columns.map((name) => ({ name, type: 'text' })), c.rules ?? RULES);
    t.same(Object.fromEntries(plan.map((m) => [m.column, m.rule])), c.masked, `${c.dialect ?? 'postgresql'}: ${c.name}`);
  }
}

t.test('A: whole-row references, attribute notation', async (t) => {
  run(t, [
    { name: 'c.row_to_json on a table', sql: 'SELECT c.row_to_json FROM customers c', columns: ['row_to_json'], masked: { row_to_json: U } },
    { name: 'c.json_agg, c.concat, c.to_jsonb, c.quote_literal', sql: 'SELECT c.json_agg, c.concat, c.to_jsonb AS d, c.quote_literal FROM customers c', columns: ['json_agg', 'concat', 'd', 'quote_literal'], masked: { json_agg: U, concat: U, d: U, quote_literal: U } },
    { name: 'table-name and schema qualifiers', sql: 'SELECT customers.to_json AS a, public.customers.row_to_json AS b FROM public.customers', columns: ['a', 'b'], masked: { a: U, b: U } },
    { name: 'on a subquery with named columns: traced to them', sql: 'SELECT t.concat FROM (SELECT email, name FROM customers) t', columns: ['concat'], masked: { concat: 'customers.email' } },
    { name: 'on a CTE', sql: 'WITH w AS (SELECT id, ssn FROM customers) SELECT w.row_to_json FROM w', columns: ['row_to_json'], masked: { row_to_json: 'ssn' } },
    { name: 'a column of that name in a subquery is the column', sql: 'SELECT t.concat FROM (SELECT name AS concat FROM customers) t', columns: ['concat'], masked: {} },
    { name: 'a plain column is still a column', sql: 'SELECT c.name, c.id FROM customers c', columns: ['name', 'id'], masked: {} },
    { name: 'a function the deployment allows, in attribute notation', sql: 'SELECT c.get_contact FROM customers c', columns: ['get_contact'], masked: {} },
    { name: 'the row as a value, cast, aggregated, formatted', sql: "SELECT c::text AS a, ROW(c.*)::text AS b, array_agg(c)::text AS d, format('%s', c) AS f FROM customers c GROUP BY c.id", columns: ['a', 'b', 'd', 'f'], masked: { a: U, b: U, d: U, f: U } },
    { name: 'the row of a subquery as a value: traced', sql: 'SELECT to_jsonb(t) AS j FROM (SELECT email AS e FROM customers) t', columns: ['j'], masked: { j: 'customers.email' } },
    { name: 'Trino has no attribute notation', dialect: 'trino', sql: 'SELECT c.concat FROM customers c', columns: ['concat'], masked: {} },
    { name: 'BigQuery: TO_JSON_STRING of a row', dialect: 'bigquery', sql: 'SELECT TO_JSON_STRING(c) AS j FROM customers AS c', columns: ['j'], masked: { j: U } },
    { name: 'BigQuery: SELECT AS STRUCT of a table in a subquery', dialect: 'bigquery', sql: 'SELECT ARRAY(SELECT AS STRUCT * FROM customers) AS a', columns: ['a'], masked: { a: U } },
    { name: 'BigQuery: SELECT AS STRUCT of named columns', dialect: 'bigquery', sql: 'SELECT ARRAY(SELECT AS STRUCT email, id FROM customers) AS a FROM t', columns: ['a'], masked: { a: 'customers.email' } },
  ]);
  // allowed user functions reach the whole row too
  const allowed = planMasks('SELECT c.get_contact FROM customers c', 'postgresql', [{ name: 'get_contact', type: 'text' }], RULES, (await import('../../actors/lib/masking/functions.js')).opaqueFunctions(['get_contact']));
  t.same(allowed.map((m) => m.rule), [U], 'c.f with f in database.allowed_functions: f(c), unknown');
});

t.test('B: names as the server resolves them', async (t) => {
  run(t, [
    // PostgreSQL: the parser folds unquoted names; quoted ones are other names
    { name: 'a quoted "CUSTOMERS" CTE does not shadow customers', sql: `WITH "CUSTOMERS" AS (SELECT 'x' AS email) SELECT c.email AS e FROM customers c`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'an unquoted CUSTOMERS CTE does', sql: `WITH CUSTOMERS AS (SELECT 'x' AS email) SELECT c.email AS e FROM customers c`, columns: ['e'], masked: {} },
    { name: 'an inner "C" is not the outer c', sql: `SELECT (SELECT c.email FROM (SELECT 'x' AS email) AS "C") AS e FROM customers c`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'an inner C is the outer... no: C folds to c, the inner one', sql: `SELECT (SELECT c.email FROM (SELECT 'x' AS email) AS C) AS e FROM customers c`, columns: ['e'], masked: {} },
    { name: 'a quoted "EMAIL" column is not email', sql: `SELECT (SELECT email FROM (SELECT 'x' AS "EMAIL") s) AS e FROM customers`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'a non-LATERAL subquery does not see its sibling', sql: `SELECT (SELECT s.x FROM (SELECT 'x' AS email) c, (SELECT c.email AS x) s) AS e FROM customers c`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'a LATERAL one does', sql: `SELECT (SELECT s.x FROM (SELECT 'x' AS email) c, LATERAL (SELECT c.email AS x) s) AS e FROM customers c`, columns: ['e'], masked: {} },
    { name: 'schema.table.column: only an unaliased table', sql: `SELECT (SELECT public.customers.email FROM (SELECT 'x' AS email) AS customers) AS e FROM public.customers`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'a WITH inside a subquery shadows only there', sql: `WITH s AS (SELECT email FROM customers) SELECT (WITH "S" AS (SELECT 'x' AS email) SELECT email FROM s) AS e`, columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'a CTE reading the table it shadows', sql: 'WITH customers AS (SELECT email FROM customers) SELECT email AS e FROM customers', columns: ['e'], masked: { e: 'customers.email' } },
    {
      name: 'RIGHT JOIN USING: * by name (the merged column first, from the right)',
      sql: `SELECT * FROM (SELECT 0 AS id, 'x' AS email) s RIGHT JOIN customers c USING (email)`,
      columns: ['email', 'id', 'id', 'name', 'ssn'],
      masked: { email: 'customers.email', ssn: 'ssn' },
    },
    {
      name: 'NATURAL FULL JOIN: both sides',
      sql: `SELECT * FROM (SELECT 'x' AS email) s NATURAL FULL JOIN (SELECT email FROM customers) t`,
      columns: ['email'],
      masked: { email: 'customers.email' },
    },
    { name: 'a rule with a schema matches a table written without one', sql: 'SELECT email FROM customers', columns: ['email'], rules: [{ field_pattern: 'public.customers.email', strategy: 'hash' }], masked: { email: 'public.customers.email' } },
    { name: 'but not one written in another schema', sql: 'SELECT email FROM crm.customers', columns: ['email'], rules: [{ field_pattern: 'public.customers.email', strategy: 'hash' }], masked: {} },
    // MySQL: aliases and table names compare by the server's settings: every candidate
    { name: 'an inner alias C and an outer c: both', dialect: 'mysql', sql: "SELECT (SELECT c.email FROM (SELECT 'x' AS email) C LIMIT 1) AS e FROM customers c", columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'backquoted aliases of different case: both', dialect: 'mysql', sql: "SELECT (SELECT `C`.email FROM (SELECT 'x' AS email) `c` LIMIT 1) AS e FROM customers `C`", columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'a CTE and the table it may shadow: both', dialect: 'mysql', sql: "WITH Customers AS (SELECT 'x' AS email) SELECT c.email AS e FROM customers c", columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'columns compare without case', dialect: 'mysql', sql: "SELECT (SELECT EMAIL FROM (SELECT 'x' AS email) s) AS e FROM customers", columns: ['e'], masked: {} },
    { name: 'a qualified column stays qualified', dialect: 'mysql', sql: 'SELECT c.name FROM customers c', columns: ['name'], masked: {} },
    { name: 'BigQuery: a backquoted `CUSTOMERS` CTE: both', dialect: 'bigquery', sql: "WITH `CUSTOMERS` AS (SELECT 'x' AS email) SELECT c.email AS e FROM customers AS c", columns: ['e'], masked: { e: 'customers.email' } },
    { name: 'BigQuery: a subquery in FROM sees the items before it', dialect: 'bigquery', sql: 'SELECT s.x FROM customers AS c, (SELECT c.email AS x) AS s', columns: ['x'], masked: { x: 'customers.email' } },
    { name: 'Trino: names fold', dialect: 'trino', sql: `WITH "CUSTOMERS" AS (SELECT 'x' AS email) SELECT c.email AS e FROM customers c`, columns: ['e'], masked: {} },
  ]);
});

t.test('C: reads inside documents', async (t) => {
  run(t, [
    { name: 'subscripts', sql: "SELECT payload['contact']['email'] AS x FROM customers", columns: ['x'], masked: { x: 'customers.email' } },
    { name: 'a subscript on another key', sql: "SELECT payload['contact']['phone'] AS x FROM customers", columns: ['x'], masked: {} },
    { name: 'computed keys', sql: "SELECT payload->('con'||'tact')->>'phone' AS x, payload #>> ARRAY['contact', lower('X')] AS y, jsonb_extract_path_text(payload, 'contact', 'em' || 'ail') AS z FROM customers", columns: ['x', 'y', 'z'], masked: { x: U, y: U, z: U } },
    { name: 'a computed key into a constant document', sql: "SELECT ('{\"a\": 1}'::jsonb)->>(lower('A')) AS x", columns: ['x'], masked: {} },
    { name: 'jsonpath wildcards, recursion, keyvalue()', sql: "SELECT jsonb_path_query(payload, '$.**') AS a, jsonb_path_query(payload, '$.*.phone') AS b, jsonb_path_query(payload, '$.contact.keyvalue()') AS c FROM customers", columns: ['a', 'b', 'c'], masked: { a: U, b: U, c: U } },
    { name: 'jsonpath with an escaped key', sql: `SELECT jsonb_path_query(payload, '$.contact."e\\u006dail"') AS x FROM customers`, columns: ['x'], masked: { x: 'customers.email' } },
    { name: 'jsonpath on another key, with a filter', sql: `SELECT jsonb_path_query(payload, 'lax $.contact.phone ? (@ like_regex "^1")') AS x FROM customers`, columns: ['x'], masked: {} },
    { name: 'a filter testing a masked key: a name in the value', sql: `SELECT jsonb_path_query(payload, '$.contact ? (@.email like_regex "^a")') AS x FROM customers`, columns: ['x'], masked: { x: 'customers.email' } },
    { name: 'jsonb_to_record AS x(email text)', sql: "SELECT x.email AS e, x.phone FROM customers, jsonb_to_record(payload->'contact') AS x(email text, phone text)", columns: ['e', 'phone'], masked: { e: 'customers.email' } },
    { name: 'jsonb_each: the values are under unknown keys, the keys are names', sql: "SELECT key, value FROM customers, jsonb_each(payload->'contact')", columns: ['key', 'value'], masked: { value: U } },
    { name: 'jsonb_each_text in the select list', sql: "SELECT jsonb_each_text(payload->'contact') AS kv FROM customers", columns: ['kv'], masked: { kv: U } },
    { name: 'a sub-document as it is: walked, not masked whole', sql: "SELECT payload->'contact' AS c, payload->>'contact' AS t FROM customers", columns: ['c', 't'], masked: {} },
    { name: 'a sub-document turned into another value', sql: `SELECT split_part(payload->>'contact', '"', 4) AS a, upper(payload->>'contact') AS b FROM customers`, columns: ['a', 'b'], masked: { a: U, b: U } },
    { name: 'through a CTE, then changed', sql: "WITH s AS (SELECT payload->>'contact' AS c FROM customers) SELECT upper(c) AS u FROM s", columns: ['u'], masked: { u: U } },
    { name: 'a path through a CTE', sql: "WITH s AS (SELECT payload->'contact' AS c FROM customers) SELECT c->>'email' AS e, c->>'phone' AS p FROM s", columns: ['e', 'p'], masked: { e: 'customers.email' } },
    { name: 'a cast to a number proves a scalar', sql: "SELECT sum((payload->>'amount')::numeric) AS s, max(payload->>'city') AS m FROM customers", columns: ['s', 'm'], masked: {} },
    { name: 'a comparison only tests', sql: "SELECT count(*) FILTER (WHERE payload->>'city' = 'London') AS n, CASE WHEN payload->>'vip' = 'true' THEN 'vip' END AS k FROM customers GROUP BY 2", columns: ['n', 'k'], masked: {} },
    { name: 'the document read inside elsewhere, turned into text here', sql: "SELECT payload->>'city' AS city, encode(convert_to(payload::text, 'UTF8'), 'base64') AS b FROM customers", columns: ['city', 'b'], masked: { b: U } },
    { name: 'a dotted rule naming the document column covers any value made from it', sql: "SELECT encode(convert_to(payload::text, 'UTF8'), 'base64') AS b, payload->>'city' AS c FROM customers", columns: ['b', 'c'], rules: [{ field_pattern: 'payload.email', strategy: 'redact' }], masked: { b: 'payload.email' } },
    { name: 'JSON_TABLE columns read their paths', sql: "SELECT j.* FROM customers, JSON_TABLE(payload, '$.contact' COLUMNS (email text, phone text PATH '$.phone')) AS j", columns: ['email', 'phone'], masked: { email: 'customers.email' } },
    { name: 'JSON_VALUE proves a scalar', sql: "SELECT upper(JSON_VALUE(payload, '$.city')) AS c FROM customers", columns: ['c'], masked: {} },
    { name: 'MySQL: a CONCAT-built path', dialect: 'mysql', sql: "SELECT JSON_EXTRACT(payload, CONCAT('$.', 'contact', '.email')) AS x FROM customers", columns: ['x'], masked: { x: U } },
    { name: 'MySQL: wildcards', dialect: 'mysql', sql: "SELECT JSON_EXTRACT(payload, '$.contact.*') AS a, JSON_EXTRACT(payload, '$**.phone') AS b FROM customers", columns: ['a', 'b'], masked: { a: U, b: U } },
    { name: 'MySQL: ->> paths', dialect: 'mysql', sql: "SELECT payload->>'$.contact.email' AS a, payload->>'$.contact.phone' AS b FROM customers LIMIT 1, 2", columns: ['a', 'b'], masked: { a: 'customers.email' } },
    { name: 'MySQL: a sub-document cut', dialect: 'mysql', sql: "SELECT SUBSTRING(JSON_EXTRACT(payload, '$.contact'), 3) AS x FROM customers", columns: ['x'], masked: { x: U } },
    { name: 'BigQuery: JSON_QUERY wildcard, field access, subscripts', dialect: 'bigquery', sql: "SELECT JSON_QUERY(payload, '$.contact.*') AS a, payload.contact.email AS b, payload['contact']['phone'] AS c FROM customers", columns: ['a', 'b', 'c'], masked: { a: U, b: 'customers.email' } },
    { name: 'BigQuery: INT64 proves a scalar', dialect: 'bigquery', sql: 'SELECT ABS(INT64(payload.total)) AS t FROM customers', columns: ['t'], masked: {} },
  ]);
});

t.test('the path reader', async (t) => {
  const cases: Array<[string, string[] | undefined]> = [
    ['$', []],
    ['$.a.b', ['a', 'b']],
    ['lax $.a', ['a']],
    ['strict $."a b".c', ['a b', 'c']],
    ['$."e\\u006dail"', ['email']],
    ['$."e\\x6dail"', ['email']],
    ['$."\\u{1F600}"', ['\u{1F600}']],
    ["$['a']['b']", ['a', 'b']],
    ['$["a"][0]', ['a', INDEX]],
    ['$.a[*].b', ['a', INDEX, 'b']],
    ['$.a[last].b', ['a', INDEX, 'b']],
    ['$.a[1 to 3, 5]', ['a', INDEX]],
    ['$.a[last - 1]', ['a', INDEX]],
    ['$.a.size()', ['a']],
    ['$.a.datetime("YYYY")', ['a']],
    ['$.a ? (@.b == "x").c', ['a', 'c']],
    ['$.*', undefined],
    ['$.a.*', undefined],
    ['$.**', undefined],
    ['$.a.**{1 to 2}', undefined],
    ['$**.a', undefined],
    ['$..a', undefined],
    ['$.a.keyvalue()', undefined],
    ['$.a.unknownmethod()', undefined],
    ['$[$i]', undefined],
    ['$.a + 1', undefined],
    ['$var.a', undefined],
    ['a.b', undefined],
    ['$."unterminated', undefined],
    ['$."bad \\q escape"', undefined],
  ];
  for (const [path, want] of cases) t.same(parseJsonPath(path)?.steps, want, path);
  t.same(parseJsonPath('$.a ? (@.email == "x" && @."ssn" != "y")')?.tested, ['email', 'ssn'], 'a filter\'s keys are names it tests');
  t.same(parsePgTextArray('{contact,email}'), ['contact', 'email']);
  t.same(parsePgTextArray('{"con tact", "e\\"mail" , x}'), ['con tact', 'e"mail', 'x']);
  t.same(parsePgTextArray('{}'), []);
  t.equal(parsePgTextArray('{a,{b}}'), undefined, 'nested: not a path');
  t.equal(parsePgTextArray('a,b'), undefined);
});

t.test('rules reach keys on a path: T names the table, the document column or a key above', async (t) => {
  const src = { table: 'public.customers', column: 'payload', path: ['contact', INDEX, 'email'] };
  const cases: Array<[string, boolean]> = [
    ['email', true], ['*mail', true], ['customers.email', true], ['public.customers.email', true], ['payload.email', true],
    ['customers.payload.email', true], ['contact.email', true], ['payload.contact.email', true], ['*.email', true],
    ['leads.email', false], ['orders.email', false], ['crm.customers.email', false], ['customers.phone', false], ['payload', true],
    ['customers.payload', true], ['contact', true], ['orders.payload', false],
  ];
  for (const [pattern, want] of cases) t.equal(sourceMatches(compileRule({ field_pattern: pattern, strategy: 'hash' }), src), want, pattern);
  t.ok(sourceMatches(compileRule({ field_pattern: 'leads.email', strategy: 'hash' }), { column: 'email' }), 'a source without a table: K alone');
  t.ok(keyMatches(compileRule({ field_pattern: 'contact.email', strategy: 'hash' }), 'email', ['contact'], [['orders', 'doc']], false), 'inside a document: a key above');
  t.notOk(keyMatches(compileRule({ field_pattern: 'customers.email', strategy: 'hash' }), 'email', ['contact'], [['orders', 'doc']], false), 'inside another table\'s document');
  t.ok(keyMatches(compileRule({ field_pattern: 'customers.email', strategy: 'hash' }), 'email', [], [], true), 'a document of unknown origin: K alone');
});

const log = createLogger({ svc: 'test', level: 'silent' });
const hasher = createHasher('k');
const deps = { rules: { get: async (): Promise<MaskRuleLite[]> => RULES }, hasher, log };
const ctx = { requestId: 'classes' };
const doc = JSON.stringify({ contact: { email: 'ada@example.com', phone: '+1 555 0100' }, city: 'London', ids: { ssn: '123-45-6789' }, list: [{ ssn: '987-65-4321' }], inner: JSON.stringify({ ssn: '111-22-3333' }) });

t.test('documents in a result: masked keys masked in place, the rest readable', async (t) => {
  const out = await mask({ sql: 'SELECT id, payload FROM customers', dialect: 'postgresql', columns: [{ name: 'id', type: 'int4' }, { name: 'payload', type: 'jsonb' }], rows: [[1, doc], [2, null]] }, deps, ctx);
  const got = JSON.parse(out.rows[0]![1] as string);
  t.equal(got.contact.email, 'a***@example.com', 'customers.email: partial, inside the customers table\'s document');
  t.equal(got.contact.phone, '+1 555 0100', 'other keys stay');
  t.match(got.ids.ssn, /^sha256:/, 'ssn: hash, nested');
  t.match(got.list[0].ssn, /^sha256:/, 'inside an array');
  t.match(JSON.parse(got.inner).ssn, /^sha256:/, 'a document held as a string inside the document');
  t.equal(got.city, 'London');
  t.equal(out.rows[1]![1], null);
  t.same(out.masked.map((m) => [m.column, m.strategy]), [['payload', 'hash']], 'the column is reported, with the strongest strategy used');

  const other = await mask({ sql: 'SELECT doc FROM orders', dialect: 'postgresql', columns: [{ name: 'doc', type: 'jsonb' }], rows: [[JSON.stringify({ email: 'x@y.z', ssn: '1' })]] }, deps, ctx);
  const o = JSON.parse(other.rows[0]![0] as string);
  t.equal(o.email, 'x@y.z', 'customers.email does not reach another table\'s document');
  t.match(o.ssn, /^sha256:/, 'an undotted rule reaches every document');
  const redacted = await mask({ sql: 'SELECT payload FROM customers', dialect: 'postgresql', columns: [{ name: 'payload', type: 'jsonb' }], rows: [[doc]], rules: [{ field_pattern: 'payload.contact', strategy: 'redact' }] }, deps, ctx);
  t.equal(JSON.parse(redacted.rows[0]![0] as string).contact, REDACTED, 'a rule on a key holding an object: the object redacted');

  const object = await mask({ sql: 'SELECT doc FROM orders', dialect: 'postgresql', columns: [{ name: 'doc', type: 'jsonb' }], rows: [[JSON.stringify({ ssn: { a: 1 } })]], rules: [{ field_pattern: 'ssn', strategy: 'partial' }] }, deps, ctx);
  t.match(JSON.parse(object.rows[0]![0] as string).ssn, /^sha256:/, 'an object under a masked key: hashed whole, never partial');
});

t.test('text that shows a masked key but is no document: masked whole', async (t) => {
  const columns = [{ name: 't', type: 'text' }];
  for (const [label, text] of [
    ['cut', doc.slice(1)],
    ['joined', `${doc},${doc}`],
    ['PostgreSQL array text', `{"${doc.replaceAll('"', '\\"')}"}`],
    ['PostgreSQL record text', `(1,"${doc.replaceAll('"', '""')}")`],
    ['after a prefix', `x${doc}`],
  ] as const) {
    const out = await mask({ sql: 'SELECT t FROM x', dialect: 'postgresql', columns, rows: [[text]] }, deps, ctx);
    t.match(out.rows[0]![0], /^sha256:/, `${label}: hashed whole`);
  }
  const harmless = await mask({ sql: 'SELECT t FROM x', dialect: 'postgresql', columns, rows: [['he said "hello": bye'], ['{"city": "London"}']] }, deps, ctx);
  t.same(harmless.rows, [['he said "hello": bye'], ['{"city": "London"}']], 'quotes and colons alone, or documents without masked keys, stay');
  t.same(harmless.masked, []);
});

t.test('a document nested deeper than the walk goes: masked whole', async (t) => {
  let deep = '{"ssn": "123-45-6789"}';
  for (let i = 0; i < 300; i++) deep = `{"a": ${deep}}`;
  let plain = '{"city": "London"}';
  for (let i = 0; i < 300; i++) plain = `{"a": ${plain}}`;
  const out = await mask({ sql: 'SELECT d FROM x', dialect: 'postgresql', columns: [{ name: 'd', type: 'jsonb' }], rows: [[deep], [plain]] }, deps, ctx);
  t.match(out.rows[0]![0], /^sha256:/, 'a masked key down there: the whole cell');
  t.equal(out.rows[1]![0], plain, 'no key a rule matches: left as it is, not even parsed');
});

t.test('a whole column turned into text that still looks like a document: masked whole', async (t) => {
  const col = [{ name: 'x', type: 'text' }];
  const renamed = JSON.stringify({ contact: { mail: 'ada@example.com' } });
  const run = (sql: string, cell: string) => mask({ sql, dialect: 'postgresql', columns: col, rows: [[cell]] }, deps, ctx);
  const a = await run("SELECT regexp_replace(payload::text, 'email', 'mail') AS x FROM customers", renamed);
  t.same(a.masked.map((m) => m.rule), [U], 'keys renamed: no key is left to match, the column is masked whole');
  const b = await run("SELECT jsonb_build_object('p', regexp_replace(payload::text, 'email', 'mail')::jsonb) AS x FROM customers", JSON.stringify({ p: { contact: { mail: 'x' } } }));
  t.same(b.masked.map((m) => m.rule), [U], 'parsed back into a document inside a built one');
  const pivot = await run('SELECT jsonb_object_agg(status, n) AS x FROM (SELECT status, count(*) AS n FROM orders GROUP BY 1) s', JSON.stringify({ paid: 3, open: 1 }));
  t.same(pivot.masked, [], 'a document the statement builds from its own values stays');
  const names = await run("SELECT upper(name) AS x FROM customers", 'ADA');
  t.same(names.masked, [], 'a value made from a column that is no document stays');
  const keyDoc = await run('SELECT jsonb_object_agg(id, 1) AS x FROM customers', JSON.stringify({ [JSON.stringify({ email: 'ada@example.com' })]: 1 }));
  t.match(keyDoc.rows[0]![0], /^sha256:/, 'a key holding a document with a masked key: the cell masked whole');
});
