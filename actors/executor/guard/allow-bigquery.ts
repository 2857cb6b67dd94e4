/**
 * What a BigQuery (GoogleSQL) query may call, cast to and read: the allow-lists of the
 * BigQuery guard (guard/bigquery.ts). Everything not here is refused with its name and why;
 * database.allowed_functions adds names (persistent UDFs, or built-ins left out here).
 *
 * Names are GoogleSQL's, lower-cased, namespaced ones with their namespace (`net.host`). A
 * name is listed only when it computes on the values it is given, inside the warehouse: no
 * call out to another service (Vertex AI, Cloud KMS, Cloud Storage, Earth Engine, another
 * database), no text run as SQL, no error text made from data. Each group says in one line why
 * it is there. The deny list (deny.ts) still comes first: it names what does harm, with its
 * own reason.
 */

export interface AllowGroup {
  /** why these are allowed, for people */
  readonly why: string;
  readonly names: readonly string[];
}

export const BIGQUERY_FUNCTIONS: readonly AllowGroup[] = [
  {
    why: 'aggregates: the core of analytics (ARRAY_AGG and STRING_AGG are bounded by the result-size cap, not here)',
    names: [
      'any_value', 'array_agg', 'array_concat_agg', 'avg', 'bit_and', 'bit_or', 'bit_xor', 'count', 'countif', 'grouping',
      'logical_and', 'logical_or', 'max', 'max_by', 'min', 'min_by', 'string_agg', 'sum',
    ],
  },
  {
    why: 'approximate aggregates and HyperLogLog++ sketches: counts and quantiles over large tables',
    names: [
      'approx_count_distinct', 'approx_quantiles', 'approx_top_count', 'approx_top_sum',
      'hll_count.init', 'hll_count.merge', 'hll_count.merge_partial', 'hll_count.extract',
    ],
  },
  {
    why: 'statistical aggregates',
    names: ['corr', 'covar_pop', 'covar_samp', 'stddev', 'stddev_pop', 'stddev_samp', 'var_pop', 'var_samp', 'variance'],
  },
  {
    why: 'window functions: numbering, navigation and percentiles',
    names: [
      'row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile',
      'lag', 'lead', 'first_value', 'last_value', 'nth_value', 'percentile_cont', 'percentile_disc',
    ],
  },
  {
    why: 'mathematics, the SAFE_ arithmetic that returns NULL instead of failing, and bucketing',
    names: [
      'abs', 'sign', 'is_inf', 'is_nan', 'ieee_divide', 'sqrt', 'cbrt', 'pow', 'power', 'exp', 'ln', 'log', 'log10',
      'greatest', 'least', 'div', 'mod', 'round', 'trunc', 'ceil', 'ceiling', 'floor',
      'safe_divide', 'safe_multiply', 'safe_negate', 'safe_add', 'safe_subtract',
      'cos', 'cosh', 'acos', 'acosh', 'sin', 'sinh', 'asin', 'asinh', 'tan', 'tanh', 'atan', 'atanh', 'atan2',
      'cot', 'coth', 'csc', 'csch', 'sec', 'sech', 'range_bucket', 'bit_count', 'euclidean_distance', 'cosine_distance',
    ],
  },
  {
    why: 'random values: non-deterministic, and they touch nothing',
    names: ['rand', 'generate_uuid'],
  },
  {
    why: 'strings and bytes, regular expressions (RE2: linear time) and formatting',
    names: [
      'ascii', 'byte_length', 'char_length', 'character_length', 'chr', 'code_points_to_bytes', 'code_points_to_string',
      'collate', 'concat', 'contains_substr', 'edit_distance', 'ends_with', 'format', 'initcap', 'instr', 'left', 'length',
      'lower', 'lpad', 'ltrim', 'normalize', 'normalize_and_casefold', 'octet_length', 'repeat', 'replace', 'reverse',
      'right', 'rpad', 'rtrim', 'soundex', 'split', 'starts_with', 'strpos', 'substr', 'substring', 'to_code_points',
      'translate', 'trim', 'unicode', 'upper',
      'regexp_contains', 'regexp_extract', 'regexp_extract_all', 'regexp_instr', 'regexp_replace', 'regexp_substr',
    ],
  },
  {
    why: 'encodings and hashes of values (fingerprints, not secrets)',
    names: [
      'from_base32', 'from_base64', 'from_hex', 'to_base32', 'to_base64', 'to_hex', 'safe_convert_bytes_to_string',
      'farm_fingerprint', 'md5', 'sha1', 'sha256', 'sha512',
    ],
  },
  {
    why: 'dates, times, datetimes and timestamps: arithmetic, truncation, buckets, formatting, parsing and time zones',
    names: [
      'current_date', 'date', 'date_add', 'date_sub', 'date_diff', 'date_trunc', 'date_bucket', 'date_from_unix_date',
      'format_date', 'parse_date', 'last_day', 'unix_date', 'extract',
      'current_datetime', 'datetime', 'datetime_add', 'datetime_sub', 'datetime_diff', 'datetime_trunc', 'datetime_bucket',
      'format_datetime', 'parse_datetime',
      'current_time', 'time', 'time_add', 'time_sub', 'time_diff', 'time_trunc', 'format_time', 'parse_time',
      'current_timestamp', 'timestamp', 'timestamp_add', 'timestamp_sub', 'timestamp_diff', 'timestamp_trunc', 'timestamp_bucket',
      'format_timestamp', 'parse_timestamp', 'timestamp_seconds', 'timestamp_millis', 'timestamp_micros',
      'unix_seconds', 'unix_millis', 'unix_micros',
      'make_interval', 'justify_days', 'justify_hours', 'justify_interval',
    ],
  },
  {
    why: 'ranges of dates and timestamps',
    names: ['range', 'range_start', 'range_end', 'range_contains', 'range_overlaps', 'range_intersect', 'generate_range_array'],
  },
  {
    why: 'JSON: extractors, converters, constructors, and mutators (which return a new value; nothing is stored)',
    names: [
      'json_query', 'json_value', 'json_query_array', 'json_value_array',
      'json_extract', 'json_extract_scalar', 'json_extract_array', 'json_extract_string_array',
      'lax_bool', 'lax_float64', 'lax_int64', 'lax_string', 'bool', 'float64', 'int64', 'string',
      'parse_json', 'to_json', 'to_json_string', 'json_array', 'json_object',
      'json_array_append', 'json_array_insert', 'json_remove', 'json_set', 'json_strip_nulls', 'json_keys', 'json_type', 'json_flatten',
    ],
  },
  {
    why: 'arrays: constructors, accessors (OFFSET, ORDINAL and their SAFE_ forms) and generators',
    names: [
      'array', 'unnest', 'array_concat', 'array_length', 'array_reverse', 'array_to_string', 'array_first', 'array_last', 'array_slice',
      'generate_array', 'generate_date_array', 'generate_timestamp_array', 'offset', 'ordinal', 'safe_offset', 'safe_ordinal',
    ],
  },
  {
    why: 'structs, conditionals and casts between plain types (the cast\'s type is checked on its own)',
    names: ['struct', 'if', 'ifnull', 'nullif', 'coalesce', 'zeroifnull', 'nullifzero', 'cast', 'safe_cast', 'parse_numeric', 'parse_bignumeric'],
  },
  {
    why: 'geography: measures and predicates on GEOGRAPHY values (ST_REGIONSTATS, which reads Earth Engine, is left out)',
    names: [
      'st_area', 'st_asbinary', 'st_asgeojson', 'st_astext', 'st_boundary', 'st_buffer', 'st_bufferwithtolerance', 'st_centroid',
      'st_centroid_agg', 'st_closestpoint', 'st_clusterdbscan', 'st_contains', 'st_convexhull', 'st_coveredby', 'st_covers',
      'st_difference', 'st_dimension', 'st_disjoint', 'st_distance', 'st_dump', 'st_dwithin', 'st_endpoint', 'st_equals',
      'st_extent', 'st_exteriorring', 'st_geogfrom', 'st_geogfromgeojson', 'st_geogfromtext', 'st_geogfromwkb', 'st_geogpoint',
      'st_geogpointfromgeohash', 'st_geohash', 'st_geometrytype', 'st_interiorrings', 'st_intersection', 'st_intersects',
      'st_intersectsbox', 'st_isclosed', 'st_iscollection', 'st_isempty', 'st_isring', 'st_length', 'st_lineinterpolatepoint',
      'st_linelocatepoint', 'st_linesubstring', 'st_makeline', 'st_makepolygon', 'st_makepolygonoriented', 'st_maxdistance',
      'st_npoints', 'st_numgeometries', 'st_numpoints', 'st_perimeter', 'st_pointn', 'st_simplify', 'st_snaptogrid',
      'st_startpoint', 'st_touches', 'st_union', 'st_union_agg', 'st_within', 'st_x', 'st_y', 's2_cellidfrompoint', 's2_coveringcellids',
    ],
  },
  {
    why: 'BigQuery ML\'s feature preprocessing and distances: computations on the values given, no model involved',
    names: [
      'ml.bucketize', 'ml.quantile_bucketize', 'ml.hash_bucketize', 'ml.min_max_scaler', 'ml.max_abs_scaler', 'ml.standard_scaler',
      'ml.robust_scaler', 'ml.normalizer', 'ml.imputer', 'ml.polynomial_expand', 'ml.feature_cross', 'ml.ngrams', 'ml.bag_of_words',
      'ml.tf_idf', 'ml.label_encoder', 'ml.one_hot_encoder', 'ml.multi_hot_encoder', 'ml.distance', 'ml.lp_norm',
    ],
  },
  {
    why: 'NET: parsing host names and IP addresses held in the data',
    names: [
      'net.host', 'net.reg_domain', 'net.public_suffix', 'net.ip_from_string', 'net.safe_ip_from_string', 'net.ip_to_string',
      'net.ip_net_mask', 'net.ip_trunc', 'net.ipv4_from_int64', 'net.ipv4_to_int64',
    ],
  },
];

/**
 * Namespaces of built-in functions. A dotted call whose first part is one of these is a
 * built-in (allowed when listed above); any other dotted call is a persistent function in a
 * dataset. Why the unlisted members of each stay out, for the rejection message.
 */
export const BIGQUERY_NAMESPACES: Readonly<Record<string, string>> = {
  net: 'only the NET functions that parse values are allowed',
  hll_count: 'only the HLL_COUNT sketch functions are allowed',
  kll_quantiles: 'KLL sketches are not on the list (APPROX_QUANTILES answers the same questions)',
  keys: 'KEYS functions make and unwrap encryption keysets: key management, not analytics',
  aead: 'AEAD functions encrypt and decrypt: key material, not analytics',
  ml: 'of BigQuery ML, only the preprocessing functions are allowed: the others run models, which may be remote endpoints fed with rows and billed per call',
  ai: 'AI functions send rows to a remote model',
  obj: 'OBJ functions reach Cloud Storage objects',
};

/**
 * Built-in names refused with a reason more precise than "not on the list". They can still be
 * allowed by listing them in database.allowed_functions.
 */
export const BIGQUERY_NOT_ALLOWED: Readonly<Record<string, string>> = {
  session_user: 'it tells who Cortado runs as (the service account), which a question never needs',
  vector_search: 'a table function running a vector search: not analytical SQL',
  appends: 'a change-history table function: it reads the history of writes to a table, not analytical SQL',
  changes: 'a change-history table function: it reads the history of writes to a table, deleted rows included',
  gap_fill: 'a table function: only UNNEST is allowed in FROM',
  range_sessionize: 'a table function: only UNNEST is allowed in FROM',
  external_object_transform: 'it reads Cloud Storage objects through an object table',
  st_regionstats: 'it reads raster data from Earth Engine, outside the warehouse',
  search: 'text search over whole rows and search indexes is not on the list (CONTAINS_SUBSTR is)',
};

/**
 * Types a CAST may name and ARRAY<>/STRUCT<>/RANGE<> may hold: GoogleSQL's plain types and
 * their aliases. BigQuery has no user-defined types; anything else cannot be a plain type.
 */
export const BIGQUERY_TYPES: readonly AllowGroup[] = [
  { why: 'whole and decimal numbers', names: ['int64', 'int', 'smallint', 'integer', 'bigint', 'tinyint', 'byteint', 'numeric', 'decimal', 'bignumeric', 'bigdecimal', 'float64'] },
  { why: 'text, bytes and truth', names: ['string', 'bytes', 'bool', 'boolean'] },
  { why: 'dates and times', names: ['date', 'datetime', 'time', 'timestamp', 'interval'] },
  { why: 'documents and shapes', names: ['json', 'geography'] },
  { why: 'containers (their element types are checked too)', names: ['array', 'struct', 'range'] },
];

/** Types that take a length or a precision and scale: STRING(10), NUMERIC(10, 2). */
export const PARAMETERISED_TYPES: ReadonlySet<string> = new Set(['string', 'bytes', 'numeric', 'decimal', 'bignumeric', 'bigdecimal']);

/**
 * INFORMATION_SCHEMA views a query may read (of a dataset, or of a region for every dataset):
 * what tables and columns there are and what they hold. The rest is refused: JOBS* (every
 * user's query text), SESSIONS*, OBJECT_PRIVILEGES (who may read what), ROUTINES (function
 * bodies), reservations, capacity and assignment views, ROW_ACCESS_POLICIES, streaming and
 * write-API timelines, and whatever Google adds next.
 */
export const BIGQUERY_INFORMATION_SCHEMA: readonly AllowGroup[] = [
  { why: 'tables, views and datasets: names, kinds and descriptions', names: ['tables', 'table_options', 'views', 'schemata', 'schemata_options'] },
  { why: 'columns and nested fields: names, types and descriptions', names: ['columns', 'column_field_paths'] },
  { why: 'keys between tables, for joins', names: ['table_constraints', 'key_column_usage', 'constraint_column_usage'] },
];

/** Why a system relation outside the safe set is refused, by its name's first word. */
export function informationSchemaWhy(view: string): string {
  const v = view.toLowerCase();
  if (v.startsWith('jobs')) return 'JOBS views show every user\'s queries and their text';
  if (v.startsWith('sessions')) return 'SESSIONS views show other users\' sessions';
  if (v.startsWith('object_privileges')) return 'it shows who may read what';
  if (v.startsWith('routine') || v === 'parameters') return 'it shows the bodies of functions and procedures';
  if (/reservation|capacity|assignment|bi_capacit/.test(v)) return 'it shows the organisation\'s capacity and billing setup';
  if (v.includes('access_polic')) return 'it shows row-level access rules';
  return 'it is not one of the table and column metadata views';
}

function setOf(groups: readonly AllowGroup[]): ReadonlySet<string> {
  return new Set(groups.flatMap((g) => g.names));
}

export const ALLOWED_FUNCTIONS: ReadonlySet<string> = setOf(BIGQUERY_FUNCTIONS);
export const ALLOWED_TYPES: ReadonlySet<string> = setOf(BIGQUERY_TYPES);
export const ALLOWED_INFORMATION_SCHEMA: ReadonlySet<string> = setOf(BIGQUERY_INFORMATION_SCHEMA);
