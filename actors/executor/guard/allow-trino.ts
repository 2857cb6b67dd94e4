/**
 * What a Trino query may call, cast to and read beyond the user's own tables: Trino's built-in
 * analytical functions, its plain types, two table functions and a safe part of
 * information_schema. Each group says in one line why it is there. Anything not listed is
 * refused by the guard (guard/trino.ts) with its name, unless the operator lists it in
 * `database.allowed_functions`.
 *
 * Names are Trino's, lower-cased (Trino compares function names case-insensitively). The
 * source is Trino's own list of functions and operators; left out on purpose:
 * - functions that reach outside the cluster or run text as SQL (`ai_*`, connectors'
 *   `query`/`raw_query`/`procedure` pass-through: deny.ts says why);
 * - what tells about the server or the asking identity rather than the data (`version`,
 *   `current_groups`);
 * - machine-learning training and evaluation (`learn_*`, `classify`, `regress`, `features`,
 *   `evaluate_classifier_predictions`): minutes of CPU per call, not analytics of a question;
 * - connector-specific functions (`random_string` of the faker catalog, MongoDB's `objectid*`)
 *   and terminal colour output (`bar`, `color`, `render`, `rgb`);
 * - every function of a catalog or schema (SQL routines, `system.builtin.*`): user routines.
 */

export interface AllowGroup {
  /** why these are allowed, for people */
  readonly why: string;
  readonly names: readonly string[];
}

export const TRINO_FUNCTION_GROUPS: readonly AllowGroup[] = [
  {
    why: 'aggregates: the core of analytics, they read only their input rows',
    names: [
      'any_value', 'arbitrary', 'array_agg', 'avg', 'bool_and', 'bool_or', 'checksum', 'count', 'count_if', 'every', 'geometric_mean',
      'listagg', 'max', 'max_by', 'min', 'min_by', 'sum', 'bitwise_and_agg', 'bitwise_or_agg', 'bitwise_xor_agg', 'histogram', 'map_agg',
      'map_union', 'multimap_agg', 'reduce_agg', 'set_agg', 'set_union',
    ],
  },
  {
    why: 'approximate aggregates and sketches: percentiles and distinct counts over large tables',
    names: [
      'approx_distinct', 'approx_most_frequent', 'approx_percentile', 'approx_set', 'empty_approx_set', 'merge', 'numeric_histogram',
      'qdigest_agg', 'tdigest_agg', 'value_at_quantile', 'values_at_quantiles', 'quantile_at_value', 'make_set_digest', 'merge_set_digest',
      'intersection_cardinality', 'jaccard_index', 'hash_counts',
    ],
  },
  {
    why: 'statistics: dispersion, correlation, regression and distributions of the rows read',
    names: [
      'corr', 'covar_pop', 'covar_samp', 'kurtosis', 'regr_intercept', 'regr_slope', 'skewness', 'stddev', 'stddev_pop', 'stddev_samp',
      'variance', 'var_pop', 'var_samp', 'beta_cdf', 'inverse_beta_cdf', 'normal_cdf', 'inverse_normal_cdf', 'wilson_interval_lower',
      'wilson_interval_upper',
    ],
  },
  {
    why: 'window functions: ranks, running values and neighbours within a partition',
    names: ['cume_dist', 'dense_rank', 'ntile', 'percent_rank', 'rank', 'row_number', 'first_value', 'last_value', 'nth_value', 'lead', 'lag'],
  },
  {
    why: 'row pattern navigation (MATCH_RECOGNIZE): positions within a match',
    names: ['first', 'last', 'prev', 'next', 'classifier', 'match_number'],
  },
  {
    why: 'mathematics: pure functions of their arguments',
    names: [
      'abs', 'cbrt', 'ceil', 'ceiling', 'degrees', 'e', 'exp', 'floor', 'ln', 'log', 'log2', 'log10', 'mod', 'pi', 'pow', 'power', 'radians',
      'round', 'sign', 'sqrt', 'truncate', 'width_bucket', 'rand', 'random', 'acos', 'asin', 'atan', 'atan2', 'cos', 'cosh', 'sin', 'sinh',
      'tan', 'tanh', 'infinity', 'nan', 'is_finite', 'is_infinite', 'is_nan', 'from_base', 'to_base', 'cosine_similarity', 'cosine_distance',
      'bit_count', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor', 'bitwise_left_shift', 'bitwise_right_shift',
      'bitwise_right_shift_arithmetic',
    ],
  },
  {
    why: 'strings: formatting, searching and cutting text',
    names: [
      'chr', 'codepoint', 'concat', 'concat_ws', 'format', 'format_number', 'hamming_distance', 'length', 'levenshtein_distance', 'lower',
      'upper', 'lpad', 'rpad', 'ltrim', 'rtrim', 'trim', 'replace', 'reverse', 'soundex', 'split', 'split_part', 'split_to_map',
      'split_to_multimap', 'strpos', 'position', 'substr', 'substring', 'starts_with', 'ends_with', 'translate', 'word_stem', 'normalize',
      'luhn_check', 'to_utf8', 'from_utf8', 'title_case', 'parse_data_size',
    ],
  },
  {
    why: 'regular expressions: matching and extracting text',
    names: ['regexp_count', 'regexp_extract', 'regexp_extract_all', 'regexp_like', 'regexp_position', 'regexp_replace', 'regexp_split'],
  },
  {
    why: 'dates, times and time zones: truncating, shifting, parsing and formatting',
    names: [
      'current_time', 'current_timestamp', 'localtime', 'localtimestamp', 'current_timezone', 'now', 'date', 'date_add', 'date_diff',
      'date_format', 'date_parse', 'date_trunc', 'day', 'day_of_month', 'day_of_week', 'day_of_year', 'dow', 'doy', 'extract',
      'format_datetime', 'parse_datetime', 'from_iso8601_date', 'from_iso8601_timestamp', 'from_iso8601_timestamp_nanos', 'to_iso8601',
      'from_unixtime', 'from_unixtime_nanos', 'to_unixtime', 'hour', 'minute', 'second', 'millisecond', 'month', 'quarter', 'week',
      'week_of_year', 'year', 'year_of_week', 'yow', 'last_day_of_month', 'human_readable_seconds', 'parse_duration', 'to_milliseconds',
      'timezone', 'timezone_hour', 'timezone_minute', 'with_timezone', 'at_timezone', 'to_char', 'to_date', 'to_timestamp',
    ],
  },
  {
    why: 'JSON: reading values out of JSON text and building JSON',
    names: [
      'json_array_contains', 'json_array_get', 'json_array_length', 'json_extract', 'json_extract_scalar', 'json_format', 'json_parse',
      'json_size', 'is_json_scalar', 'json_query', 'json_value', 'json_exists', 'json_object', 'json_array',
    ],
  },
  {
    why: 'arrays and lambdas: building, searching and transforming arrays',
    names: [
      'all_match', 'any_match', 'none_match', 'array_distinct', 'array_except', 'array_first', 'array_last', 'array_histogram',
      'array_intersect', 'array_join', 'array_max', 'array_min', 'array_position', 'array_remove', 'array_sort', 'array_union',
      'arrays_overlap', 'cardinality', 'combinations', 'contains', 'contains_sequence', 'element_at', 'filter', 'flatten', 'ngrams',
      'reduce', 'repeat', 'sequence', 'shuffle', 'slice', 'trim_array', 'transform', 'zip', 'zip_with',
    ],
  },
  {
    why: 'maps: building and transforming key-value maps',
    names: [
      'map', 'map_concat', 'map_entries', 'map_filter', 'map_from_entries', 'map_keys', 'map_values', 'map_zip_with',
      'multimap_from_entries', 'transform_keys', 'transform_values',
    ],
  },
  {
    why: 'conditional expressions and constructors: choosing and combining values',
    names: ['if', 'coalesce', 'nullif', 'try', 'greatest', 'least', 'row', 'grouping', 'typeof'],
  },
  {
    why: 'binary values, hashes and encodings: pure functions of their arguments',
    names: [
      'from_base32', 'to_base32', 'from_base64', 'to_base64', 'from_base64url', 'to_base64url', 'from_big_endian_32', 'to_big_endian_32',
      'from_big_endian_64', 'to_big_endian_64', 'from_hex', 'to_hex', 'from_ieee754_32', 'to_ieee754_32', 'from_ieee754_64', 'to_ieee754_64',
      'crc32', 'md5', 'murmur3', 'sha1', 'sha256', 'sha512', 'spooky_hash_v2_32', 'spooky_hash_v2_64', 'xxhash64', 'hmac_md5', 'hmac_sha1',
      'hmac_sha256', 'hmac_sha512', 'uuid', 'char2hexint', 'index',
    ],
  },
  {
    why: 'URLs: parts of a URL held as text',
    names: [
      'url_decode', 'url_encode', 'url_extract_fragment', 'url_extract_host', 'url_extract_parameter', 'url_extract_path', 'url_extract_port',
      'url_extract_protocol', 'url_extract_query',
    ],
  },
  {
    why: 'geospatial: distances, shapes and tiles computed from their arguments',
    names: [
      'st_point', 'st_x', 'st_y', 'st_distance', 'st_contains', 'st_within', 'st_intersects', 'st_overlaps', 'st_touches', 'st_crosses',
      'st_disjoint', 'st_equals', 'st_area', 'st_length', 'st_astext', 'st_asbinary', 'st_geometryfromtext', 'st_geomfrombinary',
      'st_linefromtext', 'st_polygon', 'st_linestring', 'st_multipoint', 'st_buffer', 'st_centroid', 'st_envelope', 'st_convexhull',
      'st_boundary', 'st_difference', 'st_intersection', 'st_symdifference', 'st_union', 'st_isvalid', 'st_isempty', 'st_isclosed',
      'st_issimple', 'st_isring', 'st_numpoints', 'st_geometrytype', 'st_dimension', 'st_startpoint', 'st_endpoint', 'st_pointn',
      'st_exteriorring', 'st_interiorringn', 'st_numinteriorring', 'st_geometryn', 'st_numgeometries', 'st_xmin', 'st_xmax', 'st_ymin',
      'st_ymax', 'great_circle_distance', 'to_spherical_geography', 'to_geometry', 'geometry_union', 'geometry_union_agg', 'convex_hull_agg',
      'bing_tile', 'bing_tile_at', 'bing_tile_quadkey', 'bing_tile_polygon', 'bing_tile_zoom_level', 'bing_tile_coordinates',
      'bing_tiles_around', 'geometry_to_bing_tiles', 'from_geojson_geometry', 'to_geojson_geometry',
    ],
  },
];

/** Every allowed built-in function name. */
export const TRINO_FUNCTIONS: ReadonlySet<string> = new Set(TRINO_FUNCTION_GROUPS.flatMap((g) => g.names));

/**
 * Known functions that stay refused, with why (for a clearer message than "not on the list").
 * The deny list (deny.ts) comes first; these are the rest.
 */
export const TRINO_REFUSED_WHY: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(version|current_groups)$/, 'it tells about the server or the asking identity, not about the data'],
  [/^(learn_\w*|classify|regress|features|evaluate_classifier_predictions)$/, 'machine-learning training and evaluation take minutes of CPU per call'],
  [/^(random_string|objectid|objectid_timestamp|timestamp_objectid)$/, 'it belongs to one connector, not to Trino\'s analytical functions'],
  [/^json_table$/, 'JSON_TABLE\'s column definitions are not read by this guard'],
];

/**
 * Table functions (`TABLE(fn(...))`), called unqualified: both are built into Trino
 * (system.builtin), read only their arguments and the table passed in, and are plain
 * analytics. Every other table function is refused: connectors' table functions run text as
 * SQL on the underlying database (`query`, `raw_query`) or call its procedures.
 */
export const TRINO_TABLE_FUNCTIONS: ReadonlySet<string> = new Set(['exclude_columns', 'sequence']);

/**
 * Plain types: what CAST/TRY_CAST, typed literals (`DATE '2024-01-01'`) and RETURNING may
 * name. Not plain, so refused: sketch and digest types (hyperloglog, qdigest, tdigest,
 * setdigest...), geometry types, Trino's internal types (jsonpath, regexp, function types)
 * and every connector's or plugin's own type.
 */
export const TRINO_PLAIN_TYPES: ReadonlySet<string> = new Set([
  'boolean', 'tinyint', 'smallint', 'integer', 'int', 'bigint', 'real', 'double', 'decimal', 'numeric', 'varchar', 'char', 'varbinary',
  'json', 'date', 'time', 'timestamp', 'interval', 'array', 'map', 'row', 'uuid', 'ipaddress',
]);

/**
 * information_schema tables a query may read: which schemas, tables, views and columns there
 * are (Trino shows each user only what they may access). Refused: the roles and privileges
 * tables (applicable_roles, enabled_roles, roles, table_privileges, ...), which map the
 * cluster's security, not the data.
 */
export const TRINO_INFORMATION_SCHEMA_SAFE: ReadonlySet<string> = new Set(['tables', 'columns', 'views', 'schemata']);
