/**
 * The executor: the only actor that talks to the database. At start it loads the dialect's
 * parser, opens (and warms) the pool, and checks whether the role could write: a warning, or a
 * refusal to start when database.require_read_only is true.
 */
import { CortadoError, toCortadoError } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/log.js';
import { Actor, ScopeEndedEvt, SqlCheck, SqlConnectTest, SqlEstimate, SqlExecute, SqlIntrospect, SqlPing } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import type { DbEngine, WriteAccess } from './engines/engine.js';
import { createEngine } from './engines/index.js';
import { prepareGuard } from './guard/index.js';
import { check, connectTest, estimate, execute, introspect, ping, type ExecutorDeps } from './handle.js';
import { createSecretBox } from '../lib/secrets.js';
import { ScopeRegistry } from './scopes.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const engine = await createEngine(config, log);
  let ensureReadOnly: (() => Promise<void>) | undefined;
  try {
    await prepareGuard(engine.dialect);
    ensureReadOnly = await checkWriteAccess(engine, config, log);
  } catch (err) {
    await engine.close().catch(() => undefined);
    throw err;
  }

  // per-scope engines (plugins.auth sessions, API tokens with a db_config); a sealed db_config opens with this box
  const scopes = new ScopeRegistry({ config, log, bus, box: createSecretBox(config), base: engine });
  const stopListening = bus.listen(ScopeEndedEvt.subject, (data) => {
    const scope = (data as { scope?: unknown }).scope;
    if (typeof scope === 'string') void scopes.end(scope, (data as { reason?: string }).reason ?? 'ended');
  });
  const h: ExecutorDeps = { config, engine, bus, log, scopes, ...(ensureReadOnly ? { ensureReadOnly } : {}) };
  bus.serve(SqlExecute, (input, ctx) => execute(input, h, ctx));
  bus.serve(SqlCheck, (input, ctx) => check(input, h, ctx));
  bus.serve(SqlEstimate, (input, ctx) => estimate(input, h, ctx));
  bus.serve(SqlIntrospect, (input, ctx) => introspect(input, h, ctx));
  bus.serve(SqlPing, (input, ctx) => ping(input, h, ctx));
  bus.serve(SqlConnectTest, (input, ctx) => connectTest(input, h, ctx));
  log.info({ provider: engine.provider, dialect: engine.dialect }, 'executor ready');

  return {
    name: Actor.Executor,
    stop: async () => {
      stopListening();
      await scopes.close();
      await engine.close();
    },
  };
}

function refusal(config: Config, access: WriteAccess): CortadoError {
  const user = config.database.provider === 'postgresql' ? ` "${config.database.postgresql.user}"` : '';
  return new CortadoError(
    'CONFIG_INVALID',
    `database.require_read_only is true, but the database role${user} can write (${access.reasons.join('; ')}): ` +
      'connect with a role that may only SELECT, or set database.require_read_only to false',
  );
}

/**
 * Check the role once at start. A writable role is a warning, or (require_read_only) an error
 * that stops the start. When the database cannot be asked yet, the check moves to the first
 * query: the returned function runs it (until it once passes) and refuses to run SQL meanwhile.
 */
async function checkWriteAccess(engine: DbEngine, config: Config, log: Logger): Promise<(() => Promise<void>) | undefined> {
  const strict = config.database.require_read_only;
  let access: WriteAccess;
  try {
    access = await engine.canWrite();
  } catch (err) {
    const e = toCortadoError(err);
    log.warn({ code: e.code, err: e.message }, strict ? 'cannot check whether the database role can write yet: checking before the first query' : 'cannot check whether the database role can write');
    return strict ? deferredCheck(engine, config) : undefined;
  }
  if (!access.writable) return undefined;
  if (strict) throw refusal(config, access);
  log.warn({ reasons: access.reasons }, 'the database role can write: every query still runs in a read-only transaction, but a role that may only SELECT is safer');
  return undefined;
}

function deferredCheck(engine: DbEngine, config: Config): () => Promise<void> {
  let passed = false;
  return async () => {
    if (passed) return;
    const access = await engine.canWrite();
    if (access.writable) {
      const e = refusal(config, access);
      throw new CortadoError('FORBIDDEN', e.message);
    }
    passed = true;
  };
}
