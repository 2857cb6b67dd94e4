/**
 * The ops actor: the warehouse operations console's operations (docs/ops.md). Its targets
 * (BigQuery clients, a PostgreSQL pool, a Trino client) are made once at start, and closed at
 * stop. A provider or an operation name that is not one stops the start (CONFIG_INVALID), only
 * while the console is on.
 */
import { Actor, OpsRun, OpsStatus } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { run, status, type OpsDeps } from './handle.js';
import { allowedOperations, buildTargets, checkProvider } from './targets.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  checkProvider(deps.config);
  const allowed = allowedOperations(deps.config);
  const targets = deps.config.ops_agent.enabled ? buildTargets(deps.config) : [];
  const ops: OpsDeps = { bus: deps.bus, config: deps.config, log: deps.log, targets, allowed };
  deps.bus.serve(OpsStatus, async () => status(ops));
  deps.bus.serve(OpsRun, (input, ctx) => run(input, ops, ctx));
  return {
    name: Actor.Ops,
    stop: async () => {
      await Promise.allSettled(targets.map((t) => t.close()));
    },
  };
}
