/**
 * GET /api/me: who the browser is signed in as and what the pages may offer them, so the
 * dashboard's header says who you are, shows only the tabs you can use and offers only the
 * actions that will work (docs/ui.md "Signing in"). Anyone may ask (`auth: 'none'`): nobody
 * signed in gets `signed_in: false` and what an anonymous visitor may do, never a 401.
 *
 * What each answer says comes from the same rules the routes apply (edge/caller.ts), read at
 * each request so a runtime change of the configuration applies:
 *
 * | can          | true when                                                                    |
 * |--------------|------------------------------------------------------------------------------|
 * | ask          | plugins.auth.require_login is off, or someone is signed in (not an auto session) |
 * | analytics    | analytics is on and analytics.access lets this caller read it                |
 * | ops          | ops_agent is on and the admin panel's session is held                       |
 * | admin        | the admin panel's session is held                                          |
 * | tokens       | a plugins.auth session that signed in with a database account is held       |
 * | schedules    | `none` (nobody signed in), `read` (a plugins.auth session: the scheduler lists and refuses to create, see routes/schedules.ts), `own` (an assistant session or API token), `all` (the admin panel's session) |
 *
 * `sign_in` lists the sign-ins this server offers (each is its own route: /admin/login,
 * /auth/login, /assistant/login; an API token is sent as a bearer token), and `sessions` each
 * one this request holds, for Sign out to end every one of them.
 */
import Type from 'typebox';
import type { Config } from '../../../config/schema.js';
import type { CallerResolver, HeldSignIns } from '../../caller.js';
import { sendJson } from '../reply.js';
import type { Router } from '../router.js';

const Kind = Type.Union([Type.Literal('admin'), Type.Literal('assistant'), Type.Literal('auth'), Type.Literal('auto'), Type.Literal('token')]);

export const MeReply = Type.Object({
  signed_in: Type.Boolean({ description: 'someone is signed in (an auto session counts only where it may ask)' }),
  kind: Type.Optional(Kind),
  user: Type.Optional(Type.String({ description: 'the name the pages show' })),
  sessions: Type.Array(Type.Object({ kind: Kind, user: Type.String() }), { description: 'every sign-in the request holds' }),
  can: Type.Object({
    ask: Type.Boolean(),
    analytics: Type.Boolean(),
    ops: Type.Boolean(),
    admin: Type.Boolean(),
    tokens: Type.Boolean(),
    schedules: Type.Union([Type.Literal('none'), Type.Literal('read'), Type.Literal('own'), Type.Literal('all')]),
  }),
  sign_in: Type.Object({
    admin: Type.Boolean({ description: 'the admin account (directory first when ldap is on): POST /admin/login' }),
    database: Type.Boolean({ description: 'your own database account (plugins.auth): POST /auth/login' }),
    directory: Type.Boolean({ description: 'the assistant gate\'s directory login: POST /assistant/login' }),
    token: Type.Boolean({ description: 'an API token, sent as Authorization: Bearer' }),
  }),
});

/** What the caller may do, by the rules in the header. */
export function capabilities(config: Config, signIns: HeldSignIns): Record<string, unknown> {
  // an admin session kept from when the panel was on (the sessions outlive a restart) is nobody's
  // while admin.enabled is false: the panel's routes refuse it, so the pages offer it nothing
  const { admin: adminSession, ...others } = signIns;
  const held: HeldSignIns = config.admin.enabled && adminSession ? signIns : others;
  const primary = held.primary?.kind === 'admin' && !config.admin.enabled ? undefined : held.primary;
  const person = primary && primary.kind !== 'auto' ? primary : undefined;
  const requireLogin = config.plugins.auth.enabled && config.plugins.auth.require_login;
  const access = config.analytics.access;
  const analytics = config.analytics.enabled
    && (access === 'public' || (access === 'signed_in' && Boolean(primary)) || (access === 'admin' && Boolean(held.admin)));
  let schedules = 'none';
  if (primary) schedules = primary.kind === 'admin' ? 'all' : primary.kind === 'auth' || primary.kind === 'auto' ? 'read' : 'own';
  const sessions = (['admin', 'assistant', 'auth', 'token'] as const)
    .map((k) => held[k])
    .filter((c): c is NonNullable<typeof c> => Boolean(c))
    .map((c) => ({ kind: c.kind, user: c.user }));
  return {
    signed_in: Boolean(person),
    ...(person ? { kind: person.kind, user: person.user } : {}),
    sessions,
    can: {
      ask: !requireLogin || Boolean(person),
      analytics,
      ops: config.ops_agent.enabled && Boolean(held.admin),
      admin: config.admin.enabled && Boolean(held.admin),
      tokens: held.auth?.kind === 'auth',
      schedules,
    },
    sign_in: {
      admin: config.admin.enabled,
      database: config.plugins.auth.enabled,
      directory: config.plugins.assistant_login.enabled,
      token: true,
    },
  };
}

export function meRoutes(router: Router, deps: { config: Config; callers: CallerResolver }): void {
  router.get('/api/me', { auth: 'none', summary: 'who is signed in on this request, what the pages may offer them, and the sign-ins this server has', reply: MeReply }, async (req, res, ctx) => {
    sendJson(res, 200, capabilities(deps.config, await deps.callers.held(req, ctx.rid)), ctx.rid);
  });
}
