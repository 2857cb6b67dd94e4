/**
 * MCP sessions: one per connection (an SSE stream, or a Streamable HTTP session), created only
 * after the token checked out. Each holds who is calling (username, the token's id and its
 * db_config scope, secrets masked), the active mask rules and the SQL dialect, as SPEC.md asks.
 *
 * A session ends when its connection closes, when the client deletes it, when its token is
 * revoked or deleted (the identity actor's token event closes every open stream of that token)
 * or expires, when a Streamable HTTP session sits idle too long, and when the bus closes
 * (shutdown).
 */
import type { Bus, Ctx } from '../../runtime/bus.js';
import { toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/log.js';
import type { Scope } from '../../protocol/scope.js';
import type { Dialect } from '../../protocol/schemas/common.js';
import type { MaskRuleLite } from '../../protocol/schemas/policy.js';
import { MaskRulesList, SqlPing, TokenEvt } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { discoveryEnabled } from '../discovery.js';
import { callerCtx, type TokenCaller } from '../caller.js';

export type McpTransportKind = 'sse' | 'streamable_http';

export interface McpSessionInfo {
  readonly id: string;
  readonly transport: McpTransportKind;
  readonly username: string;
  readonly tokenId: string;
  /** the token's database scope, secrets masked */
  readonly dbConfig: Readonly<Record<string, unknown>>;
  /** the bus scope every tool call of the session runs in (`t:<token id>` when the token has a db_config) */
  readonly scope?: Scope;
  /** the enabled mask rules when the session opened */
  readonly maskRules: readonly MaskRuleLite[];
  readonly dialect: Dialect;
  /** discover_tables is advertised (discovery was on when the session opened: edge/discovery.ts) */
  readonly discovery: boolean;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export interface McpSession {
  readonly info: McpSessionInfo;
  /** SHA-256 of the token: later requests of the session must carry the same token */
  readonly tokenDigest: string;
  /** epoch ms of the last request */
  lastSeen: number;
  /** a stream or a request of the session is open (it is not idle) */
  busy(): boolean;
  /** end it: close its streams, forget it; idempotent */
  close(reason: string): Promise<void>;
}

/** Streamable HTTP sessions without any request for this long are closed. */
export const IDLE_MS = 30 * 60_000;
const SWEEP_MS = 60_000;
/** setTimeout's largest delay */
const MAX_TIMER_MS = 2_147_483_647;

export class McpSessionRegistry {
  private readonly sessions = new Map<string, McpSession>();
  private readonly expiry = new Map<string, NodeJS.Timeout>();
  private sweeper: NodeJS.Timeout | undefined;
  private stopListening: (() => void) | undefined;
  private dialect: Dialect | undefined;

  constructor(private readonly deps: { bus: Bus; config: Config; log: Logger; idleMs?: number }) {
    this.stopListening = deps.bus.on(TokenEvt, (evt) => {
      if (evt.action !== 'revoked' && evt.action !== 'deleted') return;
      void this.closeToken(evt.token_id, `token ${evt.action}`);
    });
    // shutdown: once the bus is gone no tool can answer; end the streams so clients reconnect elsewhere
    void deps.bus.closedPromise().then(() => this.shutdown(), () => this.shutdown());
  }

  get size(): number {
    return this.sessions.size;
  }

  count(kind: McpTransportKind): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.info.transport === kind) n++;
    return n;
  }

  get(id: string): McpSession | undefined {
    return this.sessions.get(id);
  }

  /** The open sessions of one token. */
  ofToken(tokenId: string): McpSession[] {
    return [...this.sessions.values()].filter((s) => s.info.tokenId === tokenId);
  }

  add(session: McpSession): void {
    const id = session.info.id;
    this.sessions.set(id, session);
    const left = Date.parse(session.info.expiresAt) - Date.now();
    if (Number.isFinite(left)) {
      const timer = setTimeout(() => void session.close('token expired'), Math.min(Math.max(0, left), MAX_TIMER_MS));
      timer.unref();
      this.expiry.set(id, timer);
    }
    if (session.info.transport === 'streamable_http' && !this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
      this.sweeper.unref();
    }
  }

  /** Called by a session when it ended. */
  remove(id: string): void {
    if (!this.sessions.delete(id)) return;
    const timer = this.expiry.get(id);
    if (timer) clearTimeout(timer);
    this.expiry.delete(id);
    if (this.sweeper && this.count('streamable_http') === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  async closeToken(tokenId: string, reason: string): Promise<number> {
    const open = this.ofToken(tokenId);
    if (open.length) this.deps.log.info({ token_id: tokenId, sessions: open.length, reason }, 'closing MCP sessions');
    await Promise.allSettled(open.map((s) => s.close(reason)));
    return open.length;
  }

  async closeAll(reason: string): Promise<void> {
    await Promise.allSettled([...this.sessions.values()].map((s) => s.close(reason)));
  }

  private sweep(): void {
    const limit = Date.now() - (this.deps.idleMs ?? IDLE_MS);
    for (const s of this.sessions.values()) {
      if (s.info.transport === 'streamable_http' && !s.busy() && s.lastSeen < limit) void s.close('idle');
    }
  }

  private shutdown(): void {
    this.stopListening?.();
    this.stopListening = undefined;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    void this.closeAll('shutting down');
  }

  /**
   * What a new session holds besides the token: the enabled mask rules and the dialect. The
   * dialect comes from the executor's ping once (the provider is fixed at start); when no
   * executor answers, the configured provider names it.
   */
  async describe(caller: TokenCaller, id: string, transport: McpTransportKind, rid: string): Promise<McpSessionInfo> {
    const ctx: Ctx = callerCtx(rid, caller);
    const [rules, dialect] = await Promise.all([
      this.deps.bus.request(MaskRulesList, {}, ctx),
      this.resolveDialect(ctx),
    ]);
    return {
      id,
      transport,
      username: caller.user,
      tokenId: caller.token.id,
      dbConfig: caller.token.db_config,
      ...(caller.scope ? { scope: caller.scope } : {}),
      maskRules: rules.rules.filter((r) => r.enabled).map((r) => ({ field_pattern: r.field_pattern, strategy: r.strategy })),
      dialect,
      discovery: discoveryEnabled(this.deps.config),
      createdAt: new Date().toISOString(),
      expiresAt: caller.token.expires_at,
    };
  }

  private async resolveDialect(ctx: Ctx): Promise<Dialect> {
    if (this.dialect) return this.dialect;
    try {
      const ping = await this.deps.bus.request(SqlPing, {}, ctx);
      this.dialect = ping.dialect;
      return ping.dialect;
    } catch (err) {
      const e = toCortadoError(err);
      this.deps.log.warn({ code: e.code }, 'no executor answered the ping: the MCP session takes the configured provider as its dialect');
      return this.deps.config.database.provider;
    }
  }
}

const registries = new WeakMap<Bus, McpSessionRegistry>();

/** The registry of the edge running on this bus (tests count sessions with it). */
export function mcpSessionRegistry(bus: Bus): McpSessionRegistry | undefined {
  return registries.get(bus);
}

export function createSessionRegistry(deps: { bus: Bus; config: Config; log: Logger }): McpSessionRegistry {
  const registry = new McpSessionRegistry(deps);
  registries.set(deps.bus, registry);
  return registry;
}
