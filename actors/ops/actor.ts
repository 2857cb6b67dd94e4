/**
 * The ops actor: the warehouse operations console's operations (docs/ops.md). Every setting of
 * ops_agent is read per request, so a run-time change (the admin panel; config.changed) takes
 * effect at the next request: allowed_operations, the price, the threshold, the timeout, and the
 * targets themselves — when ops_agent.enabled or ops_agent.config.projects change, the targets
 * (BigQuery clients, a PostgreSQL pool, a Trino client) are made again and the old ones closed
 * once the requests that may still use them are over (OpsRun's timeout). A provider or an
 * operation name that is not one is refused by the configuration itself (config/ops-checks.ts).
 */
import { Actor, OpsRun, OpsStatus } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { run, status, type OpsDeps } from './handle.js';
import { allowedOperations, buildTargets, type OpsTargetRunner } from './targets.js';

/** What the targets are made from: a change of it makes them again. */
function targetsKey(config: Config): string {
  return JSON.stringify([config.ops_agent.enabled, config.ops_agent.config.projects]);
}

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { config, log } = deps;
  let key = targetsKey(config);
  let targets: readonly OpsTargetRunner[] = config.ops_agent.enabled ? buildTargets(config) : [];
  const retiring = new Set<NodeJS.Timeout>();
  const old: Array<readonly OpsTargetRunner[]> = [];
  const current = (): readonly OpsTargetRunner[] => {
    const now = targetsKey(config);
    if (now === key) return targets;
    const previous = targets;
    key = now;
    targets = config.ops_agent.enabled ? buildTargets(config) : [];
    log.info({ targets: targets.map((t) => t.target.label) }, 'ops targets made again after a configuration change');
    old.push(previous);
    const timer = setTimeout(() => {
      retiring.delete(timer);
      old.splice(old.indexOf(previous), 1);
      void Promise.allSettled(previous.map((t) => t.close()));
    }, OpsRun.timeoutMs);
    timer.unref();
    retiring.add(timer);
    return targets;
  };
  const ops: OpsDeps = {
    bus: deps.bus,
    config,
    log,
    get targets() { return current(); },
    get allowed() { return allowedOperations(config); },
  };
  deps.bus.serve(OpsStatus, async () => status(ops));
  deps.bus.serve(OpsRun, (input, ctx) => run(input, ops, ctx));
  return {
    name: Actor.Ops,
    stop: async () => {
      for (const timer of retiring) clearTimeout(timer);
      await Promise.allSettled([...targets, ...old.flat()].map((t) => t.close()));
    },
  };
}
