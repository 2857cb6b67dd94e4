/**
 * The executor: the only actor that talks to the database. At start it loads the dialect's
 * parser, opens (and warms) the pool, and checks what the role may do beyond reading
 * (privilege.ts): a refusal to start, or with database.allow_privileged_role a loud warning.
 */
import { Actor, ScopeEndedEvt, SqlCheck, SqlConnectTest, SqlEstimate, SqlExecute, SqlExport, SqlIntrospect, SqlPing, SqlProfile, SqlValues } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { createEngine } from './engines/index.js';
import { startGuardWorkers } from './guard/isolated.js';
import { checkPostgresAllowList } from './guard/allow-postgresql.js';
import { checkMysqlAllowList, hasStoredFunctions } from './guard/allow-mysql.js';
import { PostgresEngine } from './engines/postgresql.js';
import { check, connectTest, estimate, execute, introspect, ping, type ExecutorDeps } from './handle.js';
import { createSecretBox } from '../lib/crypto/secrets.js';
import { ScopeRegistry } from './scopes.js';
import { checkRoleAtStart } from './privilege.js';
import { profile } from './profile.js';
import { values } from './value-index.js';
import { exportSql, exportsBucket } from './export.js';
import { warmXlsx } from '../lib/export/xlsx.js';
import { createMasking } from '../lib/masking/service.js';
import { lineageReused } from './guard/job.js';
import { startLineageWorkers } from '../lib/masking/isolated.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const engine = await createEngine(config, log);
  let ensureReadOnly: (() => Promise<void>) | undefined;
  try {
    // the guard runs in worker threads (guard/isolated.ts): started here, parsers loaded
    await startGuardWorkers(log);
    // lineage for masking: PostgreSQL's from the guard's parse; other dialects' in a worker of its own
    if (!lineageReused(engine.dialect)) await startLineageWorkers(log);
    ensureReadOnly = await checkRoleAtStart(engine, config, log);
    // the guard's allow-list, less what a function or operator of the database shadows (only warns)
    if (engine instanceof PostgresEngine) await checkPostgresAllowList(() => engine.allowListCatalog(), log);
    if (hasStoredFunctions(engine)) await checkMysqlAllowList(() => engine.storedFunctions(), log, (names) => engine.missingBuiltins(names));
  } catch (err) {
    await engine.close().catch(() => undefined);
    throw err;
  }

  // per-scope engines (plugins.auth sessions, API tokens with a db_config); a sealed db_config opens with this box
  const scopes = new ScopeRegistry({ config, log, bus, box: createSecretBox(config), base: engine });
  const stopListening = bus.on(ScopeEndedEvt, (e) => scopes.end(e.scope, e.reason));
  // every result is masked here before it leaves (lib/masking/): rules kept until evt.mask.changed
  const masking = createMasking(bus, config, log);
  const h: ExecutorDeps = { config, engine, bus, log, scopes, masking, ...(ensureReadOnly ? { ensureReadOnly } : {}) };
  bus.serve(SqlExecute, (input, ctx) => execute(input, h, ctx));
  bus.serve(SqlCheck, (input, ctx) => check(input, h, ctx));
  bus.serve(SqlEstimate, (input, ctx) => estimate(input, h, ctx));
  bus.serve(SqlIntrospect, (input, ctx) => introspect(input, h, ctx));
  bus.serve(SqlPing, (input, ctx) => ping(input, h, ctx));
  bus.serve(SqlConnectTest, (input, ctx) => connectTest(input, h, ctx));
  bus.serve(SqlProfile, (input, ctx) => profile(input, h, ctx));
  bus.serve(SqlValues, (input, ctx) => values(input, h, ctx));
  const objects = exportsBucket(bus);
  bus.serve(SqlExport, (input, ctx) => exportSql(input, { ...h, bus, objects }, ctx));
  // the xlsx thread started now, not on the first excel report (actors/lib/export/xlsx.ts)
  if (config.export.formats.includes('excel')) warmXlsx();
  log.info({ provider: engine.provider, dialect: engine.dialect }, 'executor ready');

  return {
    name: Actor.Executor,
    stop: async () => {
      stopListening();
      masking.stop();
      await scopes.close();
      await engine.close();
    },
  };
}
