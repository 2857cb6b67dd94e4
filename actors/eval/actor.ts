/**
 * The eval actor: `eval.run`, the accuracy harness (handle.ts), for `cortado eval` and the admin
 * panel's POST /admin/eval. It owns nothing but its subject: each question goes through the
 * pipeline as any question does (`ask`, then `sql.execute` for the expected rows), so several
 * copies of it share runs, and a run is as good as the pipeline it measures.
 */
import { Actor, EvalRun } from '../../protocol/subjects.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import { runEval } from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus } = deps;
  bus.serve(EvalRun, (input, ctx) => runEval(input, { bus }, ctx));
  return { name: Actor.Eval, stop: async () => undefined };
}
