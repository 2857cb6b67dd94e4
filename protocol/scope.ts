/**
 * The grammar of the two short strings that say who a request belongs to, built and read here
 * only (the edge builds them, the executor and identity read them).
 *
 * - A **scope** names whose database connection a request runs on; it travels in the bus
 *   context (`Ctx.scope`): `s:<auth session id>` (POST /auth/login) or `t:<token id>` (an API
 *   token with a db_config). No scope: the server's own database config.
 * - An **owner** names who asked, so that what one caller started (SQL held for confirmation,
 *   a conversation) is never continued by another: a scope, or `a:<digest>` (an assistant
 *   login session: a digest of its cookie) or `c:<digest>` (an anonymous widget: a digest of
 *   its session_id and the client address).
 *
 * Ids are what the identity actor hands out (32 hex digits for a session, a UUID for a
 * token) and the edge's digests (hex): letters, digits, `_` and `-`, never a colon.
 */
import Type from 'typebox';

export const ScopeKind = { Session: 'session', Token: 'token' } as const;
export type ScopeKind = (typeof ScopeKind)[keyof typeof ScopeKind];

export const OwnerKind = { ...ScopeKind, Assistant: 'assistant', Client: 'client' } as const;
export type OwnerKind = (typeof OwnerKind)[keyof typeof OwnerKind];

export type Scope = `s:${string}` | `t:${string}`;
export type Owner = Scope | `a:${string}` | `c:${string}`;

const PREFIX = { session: 's', token: 't', assistant: 'a', client: 'c' } as const satisfies Record<OwnerKind, string>;
const KIND_OF: Readonly<Record<string, OwnerKind>> = { s: 'session', t: 'token', a: 'assistant', c: 'client' };

/** the longest id a scope or owner carries */
export const MAX_ID = 100;
const ID = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_ID}}$`);

/** A scope as a bus message field. */
export const ScopeString = Type.String({ pattern: `^[st]:[A-Za-z0-9_-]{1,${MAX_ID}}$`, maxLength: MAX_ID + 2 });
/** An owner as a bus message field. */
export const OwnerString = Type.String({ pattern: `^[stac]:[A-Za-z0-9_-]{1,${MAX_ID}}$`, maxLength: MAX_ID + 2 });

function checkedId(id: string): string {
  if (!ID.test(id)) throw new TypeError(`not a scope or owner id: ${JSON.stringify(id.slice(0, 40))}`);
  return id;
}

/** `s:<id>` or `t:<id>`. Throws on an id outside the grammar (a programming error, never input). */
export function scopeOf(kind: ScopeKind, id: string): Scope {
  return `${PREFIX[kind]}:${checkedId(id)}` as Scope;
}

/** `s:`, `t:`, `a:` or `c:` and the id. Throws on an id outside the grammar. */
export function ownerOf(kind: OwnerKind, id: string): Owner {
  return `${PREFIX[kind]}:${checkedId(id)}` as Owner;
}

/** An owner's kind and id; undefined for anything that is no owner. */
export function parseOwner(value: string): { kind: OwnerKind; id: string } | undefined {
  const kind = KIND_OF[value.slice(0, 1)];
  const id = value.slice(2);
  if (!kind || value[1] !== ':' || !ID.test(id)) return undefined;
  return { kind, id };
}

/** A scope's kind and id; undefined for anything that is no scope. */
export function parseScope(value: string): { kind: ScopeKind; id: string } | undefined {
  const owner = parseOwner(value);
  return owner && (owner.kind === 'session' || owner.kind === 'token') ? { kind: owner.kind, id: owner.id } : undefined;
}

/**
 * The key something an owner named is kept under (a conversation): the owner, then the
 * caller's own name for it. Without an owner there is no key: a name is never shared between
 * callers (every edge route names the owner of its questions, edge/caller.ts).
 */
export function ownedKey(owner: string | undefined, name: string): string | undefined {
  return owner ? `${owner}/${name}` : undefined;
}
