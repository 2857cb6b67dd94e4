/**
 * The words a database error message may keep outside quotes without coming from the SQL
 * (sanitize.ts): the fixed words of the engines' messages, SQL keywords and type names. A word
 * of a message that is neither here nor in the SQL that was sent is replaced by a placeholder,
 * so a value a query smuggles out of quotes (`'" ' || email || ' "'`) or after a colon
 * (`Bad int64 value: ada@example.com`) does not survive unless it is made only of these words.
 *
 * A word missing here costs readability, never safety: the message keeps its code, its
 * identifiers and its other words. Lower-case; compared case-insensitively.
 */

const ENGLISH = `
a an the and or not no nor of in on at to for from by with without as is are was were be been being am
has have had do does did done doing can cannot could may might must should would will shall need needs needed
it its itself this that these those there here which who whom whose what when where why how than then if else
but only also all any some each every either neither both more most less least many much such same other
another own too very into onto within between after before during per via because while once yet so up down
out over under again use used uses using you your we our us one two three first second third last next
previous following yes unless until since whether though although instead otherwise still just even ever
never always already perhaps maybe meant mean means did consider try trying tried add added adding
doesn't don't didn't can't couldn't isn't aren't wasn't weren't won't wouldn't shouldn't hasn't haven't it's
let lets make makes made get gets got given give gives take takes taking keep keeps see seen look
`;

const MESSAGES = `
error errors warning invalid valid validation syntax near line lines column columns position positions offset
character characters input output value values type types typed data datatype function functions procedure
procedures operator operators operand operands argument arguments parameter parameters expression expressions
exist exists existing unknown unrecognized unrecognised unexpected expected expecting expects expect missing
mismatch mismatched match matches matching matched signature signatures supported unsupported support supports
allowed disallowed permitted prohibited denied permission permissions privilege privileges access table tables
relation relations view views schema schemas database databases catalog catalogs dataset datasets project
projects field fields key keys index indexes indices list lists clause clauses statement statements query
queries subquery subqueries ambiguous reference references referenced referencing refer refers resolved resolve
resolvable unresolved found defined undefined declared named name names alias aliases aliased duplicate
duplicated specified specify unspecified once row rows returned return returns returning result results
number numbers count length size limit limits limited exceeded exceeds exceed maximum minimum max min range
ranges overflow underflow division divide divided zero empty non nonnull negative positive appear appears
appearing aggregate aggregates aggregation aggregated window windows windowed nested nesting level levels cast
casts casting coerce coerced coercion convert converted conversion converting implicit implicitly explicit
explicitly need hint hints format formats formatted formatting malformed literal literals string strings
constant constants encoding encodings sequence sequences byte bytes digit digits hexadecimal binary octal
precision scale zone field unit units array arrays element elements dimension dimensions subscript subscripts
subscripting record records composite struct structs map maps path paths regular regex regexp pattern patterns
collation collations charset set sets mode modes order ordered ordering sort sorted sorting entry entries item
items target targets general generic internal system server client manual corresponds right check checks
version keyword keywords identifier identifiers token tokens end ends ending start starts begin beginning
accept accepts accepted single multiple several few long short large small big high low formed ill recursive
recursion correlated uncorrelated condition conditions predicate predicates filter filters partition partitions
partitioned frame frames bound bounds unbounded ordinal ordinality nullable comparison comparisons compare
compared comparable incomparable equal equality unequal implemented implementation feature features available
unavailable possible impossible correct incorrect illegal wrong bad truncated truncate truncation incompatible
compatible conflicting conflict conflicts inconsistent consistent contain contains containing contained include
includes including included part parts parse parsing parsed parser evaluate evaluating evaluation evaluated
execute executing execution executed run running read reads reading write writes writing written transaction
transactions file files object objects class member members property properties attribute attributes specifier
specifiers placeholder placeholders variable variables lock locks temporary scalar scalars vector boolean
numeric integer float real double text subselect select selected selection group grouped grouping groups
must have same common distinct exceeded overflowed constraint constraints violates violated violation unique
primary foreign default defaults modifier modifiers definition definitions declaration declared option options
setting settings configuration parameter cancel cancelled canceled canceling statement timeout timed memory
resources resource exhausted user users role roles owner current session sessions connection connections
closed open opened opening unterminated terminated quoted quote quotes unquoted escape escapes escaped
backslash bracket brackets parenthesis parentheses brace braces comma semicolon colon dot period operator
unary binary infix prefix suffix left right precedence associative nondeterministic deterministic volatile
immutable stable temporary permanent instance instances inside outside top bottom leading trailing
whitespace blank space spaces tab newline expect expected got received provided requires required require
requiring needed outer inner full natural cross lateral join joins joined joining using usage
subscripted indexable sortable hashable groupable orderable equatable unnest unnested flatten flattened
repeated repeating deprecated obsolete reserved unreserved allowed enable enabled disable disabled
operation operations action actions operate applies apply applied applicable inapplicable
wildcard star asterisk specification specifications prefix qualify qualified qualifier qualifiers unqualified
found determine determined undetermined infer inferred inference polymorphic pseudo anyelement anyarray
anycompatible anynonarray anyenum anyrange anymultirange unknown datatypes typmod
regular expressions quantifier operand brackets unbalanced balanced invalid escape sequence
json jsonb jsonpath xml html csv lob blob clob
division zero divide infinity nan numeric out range overflow
registered unregistered resolved cannot supported mismatched
correlation correlated scalar subquery subqueries closing opening
both neither whose itself
recognized recognised decoding decode decoded encode encoded symbol symbols eof
sql xpath mariadb mysql postgresql postgres trino presto bigquery googlesql
failed fail fails failure equivalent equivalents references reference implemented
broke broken node nodes worker workers cluster coordinator split splits stage stages task tasks
`;

const SQL = `
select from where group by order having limit offset fetch union all distinct join on using as with recursive
case when then else end and or not in between like ilike rlike regexp similar is null nulls true false
unknown exists any some cast try_cast safe_cast over partition rows range groups within filter lateral natural
cross inner left right full outer asc desc first last into values table tables except intersect minus qualify
window unnest array interval extract at time zone collate escape default row only ties percent tablesample
ordinality struct if replace current preceding following unbounded exclude others no
insert update delete merge create drop alter truncate grant revoke call do execute explain analyze
set show describe use begin commit rollback savepoint start transaction lock unlock
from_unixtime date_add date_sub
primary key foreign references unique check constraint index view materialized function procedure trigger
returns return language
top straight_join sql_calc_found_rows high_priority
for share nowait skip locked
div mod xor binary collation character charset
leading trailing both
`;

const TYPES = `
int int2 int4 int8 integer smallint bigint tinyint mediumint serial bigserial smallserial numeric decimal dec
number real float float4 float8 double precision money text varchar char character varying bpchar name nchar
nvarchar bytea boolean bool date time timetz timestamp timestamptz datetime year interval uuid json jsonb
jsonpath xml inet cidr macaddr macaddr8 point line lseg box polygon circle path tsvector tsquery oid regclass
regtype regproc regprocedure regoper regoperator regrole regnamespace regconfig regdictionary record void
bit varbit int4range int8range numrange tsrange tstzrange daterange int4multirange int8multirange nummultirange
tsmultirange tstzmultirange datemultirange signed unsigned zerofill blob tinyblob mediumblob longblob
tinytext mediumtext longtext enum binary varbinary geometry geometrycollection linestring multipoint
multilinestring multipolygon inet4 inet6 int64 int32 uint64 float64 string bytes bignumeric bigdecimal
geography range ipaddress hyperloglog qdigest tdigest setdigest p4hyperloglog color function row map
varchar2 timestamp_tz timestamp_ltz timestamp_ntz variant
utf8 utf-8 utf8mb3 utf8mb4 utf16 utf32 ucs2 ascii sql_ascii latin1 latin2 latin3 latin4 latin5 latin6 latin7 latin8
latin9 latin10 win866 win874 win1250 win1251 win1252 win1253 win1254 win1255 win1256 win1257 win1258 koi8r koi8u
euc_jp euc_kr euc_cn euc_tw euc_jis_2004 sjis big5 gbk gb18030 uhc johab mule_internal iso_8859_5 iso_8859_6
iso_8859_7 iso_8859_8 binary
`;

/** Word list → set (lower-cased). */
function words(...texts: string[]): ReadonlySet<string> {
  const out = new Set<string>();
  for (const t of texts) for (const w of t.split(/\s+/)) if (w) out.add(w.toLowerCase());
  return out;
}

/** Words a message may keep outside quotes. */
export const MESSAGE_WORDS: ReadonlySet<string> = words(ENGLISH, MESSAGES, SQL, TYPES);

/** What a message may keep inside quotes without coming from the SQL: keywords and type names. */
export const QUOTED_WORDS: ReadonlySet<string> = words(SQL, TYPES);

/** Fixed quoted phrases of MySQL/MariaDB messages (`Unknown column 'x' in 'field list'`). */
export const MYSQL_QUOTED_PHRASES: ReadonlySet<string> = new Set([
  'field list', 'where clause', 'on clause', 'having clause', 'order clause', 'group statement', 'from clause',
  'in/all/any subquery', 'order by', 'group by', 'partition by', 'window', 'returning', 'having', 'select',
  'where', 'on', 'from', 'update', 'set list', 'check constraint', 'default', 'field_list', 'group by clause',
]);
