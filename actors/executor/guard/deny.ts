/**
 * Functions a query may not call, per dialect. A name is matched on its last part, lower-cased
 * (`pg_catalog.pg_sleep`, `"PG_SLEEP"` and `Pg_Sleep` are all `pg_sleep`); `*` matches any run
 * of characters. Each group says in one line why it is there.
 *
 * The guards allow only what their allow-lists name (allow-<dialect>.ts); this list is not the
 * defence, it is the explanation: a well-known dangerous function is refused as
 * `dangerous_function` with the reason below, and wins over database.allowed_functions. Behind
 * the guard stand the rolled-back read-only transaction and the role's own grants
 * (docs/security.md).
 */
import type { Dialect } from '../../../protocol/schemas/common.js';

export interface DenyGroup {
  /** why these are refused, for people (it goes into the rejection message) */
  readonly why: string;
  readonly names: readonly string[];
}

const POSTGRESQL: readonly DenyGroup[] = [
  { why: 'sleeps hold a connection for nothing', names: ['pg_sleep*'] },
  { why: 'they read files and directories of the database server', names: ['pg_read_file', 'pg_read_binary_file', 'pg_ls_*', 'pg_stat_file', 'pg_file_*', 'pg_logdir_ls'] },
  { why: 'large objects read and write server-side files and storage', names: ['lo_*', 'loread', 'lowrite'] },
  { why: 'dblink opens connections to other servers and runs SQL there', names: ['dblink*'] },
  {
    why: 'they run SQL given as text, out of the guard\'s sight',
    names: ['query_to_xml*', 'table_to_xml*', 'cursor_to_xml*', 'database_to_xml*', 'schema_to_xml*', 'ts_stat', 'ts_rewrite', 'crosstab*', 'connectby'],
  },
  { why: 'they change indexes, a write even inside a read-only transaction', names: ['brin_summarize_*', 'brin_desummarize_range', 'gin_clean_pending_list'] },
  {
    why: 'they show other sessions\' activity, query text, locks and memory',
    names: ['pg_stat_get_*', 'pg_blocking_pids', 'pg_safe_snapshot_blocking_pids', 'pg_lock_status', 'pg_get_backend_memory_contexts', 'pg_prepared_statement', 'pg_cursor'],
  },
  {
    why: 'they read the server\'s settings and configuration files',
    names: ['pg_show_all_settings', 'pg_show_all_file_settings', 'pg_hba_file_rules', 'pg_ident_file_mappings', 'pg_settings_get_flags', 'pg_current_logfile', 'pg_config'],
  },
  {
    why: 'they change settings or act on the server and other sessions',
    names: [
      'set_config', 'pg_terminate_backend', 'pg_cancel_backend', 'pg_reload_conf', 'pg_rotate_logfile*', 'pg_promote',
      'pg_switch_wal', 'pg_switch_xlog', 'pg_create_restore_point', 'pg_backup_*', 'pg_start_backup', 'pg_stop_backup',
      'pg_import_system_collations', 'pg_log_backend_memory_contexts', 'pg_wal_replay_*', 'pg_xlog_replay_*', 'pg_prewarm',
      'pg_truncate_visibility_map', 'pg_log_standby_snapshot', 'setseed',
    ],
  },
  { why: 'they control replication slots and origins', names: ['pg_*replication*', 'pg_logical_*', 'pg_create_*_slot', 'pg_copy_*_slot', 'pg_drop_replication_slot'] },
  { why: 'they reset the server\'s statistics', names: ['pg_stat_reset*', 'pg_stat_statements_reset'] },
  { why: 'advisory locks and notifications reach other sessions', names: ['pg_advisory*', 'pg_try_advisory*', 'pg_notify'] },
  { why: 'they advance or set sequences and object ids', names: ['nextval', 'setval', 'pg_nextoid', 'binary_upgrade_*'] },
  { why: 'they assign a transaction id, which is a write', names: ['txid_current', 'pg_current_xact_id'] },
];

const MYSQL: readonly DenyGroup[] = [
  { why: 'sleeps and busy loops hold a connection for nothing', names: ['sleep', 'benchmark'] },
  { why: 'it reads files of the database server', names: ['load_file'] },
  { why: 'named locks reach other sessions', names: ['get_lock', 'release_lock', 'release_all_locks', 'service_get_read_locks', 'service_get_write_locks', 'service_release_locks'] },
  {
    why: 'they wait on replication',
    names: ['master_pos_wait', 'source_pos_wait', 'master_gtid_wait', 'wait_for_executed_gtid_set', 'wait_until_sql_thread_after_gtids', 'wsrep_sync_wait_upto_gtid'],
  },
  { why: 'well-known user-defined functions that run shell commands', names: ['sys_exec', 'sys_eval'] },
  { why: 'they advance, set or read back sequences (MariaDB): a write, and state kept by the session', names: ['nextval', 'setval', 'lastval'] },
  { why: 'it sets (with an argument) and reads back a value the session keeps after the question: one question could leave it for the next', names: ['last_insert_id'] },
  { why: 'their XPath errors carry their argument into the error message: a known way to read data through errors, not analytics', names: ['extractvalue', 'updatexml'] },
  {
    why: 'they change server-wide state (plugins for keyrings, version tokens, audit, firewall, replication)',
    names: ['keyring_key_*', 'version_tokens_*', 'audit_log_*', 'mysql_firewall_*', 'set_firewall_*', 'firewall_*', 'group_replication_*', 'asynchronous_connection_failover_*'],
  },
];

/** Every dialect has a list (possibly empty until its guard is written). */
export const DENY_LISTS: Readonly<Record<Dialect, readonly DenyGroup[]>> = {
  postgresql: POSTGRESQL,
  mysql: MYSQL,
  // Trino has no sleep, file or lock functions, and its guard allows only listed functions
  // (allow-trino.ts), table functions and relations; these come first, to say why they are
  // refused (also when database.allowed_functions lists one of them).
  trino: [
    { why: 'connectors\' pass-through functions run text as SQL or procedures on the underlying database, out of the guard\'s sight', names: ['query', 'raw_query', 'procedure'] },
    { why: 'they send rows to an external AI service', names: ['ai_*'] },
    { why: 'Trino\'s internal functions are not for queries', names: ['$*'] },
  ],
  // BigQuery: the guard checks every dotted suffix of a called name (`ml.generate_text`, `safe.x`)
  // before its allow-list (allow-bigquery.ts), so these are refused with their harm even when
  // database.allowed_functions lists them
  bigquery: [
    { why: 'it runs SQL given as text on another database, out of the guard\'s sight', names: ['external_query'] },
    {
      why: 'they send rows to a remote AI model or Cloud API, outside the warehouse and billed per call',
      names: ['ml.generate_*', 'ai.*', 'ml.translate', 'ml.understand_text', 'ml.process_document', 'ml.transcribe', 'ml.annotate_image'],
    },
    { why: 'it makes a signed URL that lets whoever holds it read the Cloud Storage object', names: ['obj.get_access_url'] },
    { why: 'it raises an error carrying any text it is given: a way to carry values past masking in the error message', names: ['error'] },
    {
      why: 'they unwrap Cloud KMS keys or decrypt ciphertext, undoing the encryption the data\'s owner chose',
      names: ['keys.keyset_chain', 'aead.decrypt_*', 'deterministic_decrypt_*', 'dlp_deterministic_decrypt', 'dlp_key_chain'],
    },
  ],
};

export interface DeniedFunction {
  name: string;
  why: string;
}

type Matcher = (name: string) => DeniedFunction | undefined;

function globToRegExp(glob: string): RegExp {
  const body = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${body}$`);
}

function compile(groups: readonly DenyGroup[]): Matcher {
  const rules = groups.flatMap((g) => g.names.map((n) => ({ re: globToRegExp(n), why: g.why })));
  return (name) => {
    const lower = name.toLowerCase();
    const rule = rules.find((r) => r.re.test(lower));
    return rule ? { name: lower, why: rule.why } : undefined;
  };
}

const matchers = new Map<Dialect, Matcher>();

/** The deny rule a function name falls under in this dialect, if any. */
export function deniedFunction(dialect: Dialect, name: string): DeniedFunction | undefined {
  let m = matchers.get(dialect);
  if (!m) matchers.set(dialect, (m = compile(DENY_LISTS[dialect])));
  return m(name);
}
