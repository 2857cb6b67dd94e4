/**
 * Starts a set of actors in one process and stops them in drain order: each stops taking
 * new messages, its in-flight handlers finish (up to the deadline), then it releases what it
 * holds.
 *
 * The bus counts every handler while it runs (its serving part, runtime/bus-serving.ts: the
 * one in-flight registry): the drain below waits for an actor's handlers there, and a failure
 * nobody caught (cli/crash.ts) names the requests it may belong to from it. A listener
 * (bus.listen) that throws is logged by the bus, not let through.
 */
import type { Bus } from '../../runtime/bus.js';
import type { Logger } from '../../runtime/log.js';
import type { Actor } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { ACTOR_MODULES, DRAIN_ORDER, START_ORDER } from '../index.js';
import type { RunningActor } from './actor.js';

export interface ActorHost {
  readonly names: readonly Actor[];
  stop(deadline: number): Promise<void>;
}

export async function startActors(names: readonly Actor[], deps: { bus: Bus; config: Config; log: Logger }): Promise<ActorHost> {
  const running: RunningActor[] = [];
  const ordered = START_ORDER.filter((n) => names.includes(n));
  try {
    for (const name of ordered) {
      const mod = await ACTOR_MODULES[name]();
      running.push(await mod.start({ ...deps, log: deps.log.child({ actor: name }) }));
    }
  } catch (err) {
    await Promise.allSettled(running.map((r) => r.stop()));
    throw err;
  }
  deps.log.info({ actors: ordered }, 'actors started');
  return {
    names: ordered,
    async stop(deadline: number) {
      for (const name of DRAIN_ORDER) {
        const actor = running.find((r) => r.name === name);
        if (!actor) continue;
        const left = await deps.bus.stopServing([name], deadline);
        if (left > 0) deps.log.warn({ actor: name, unfinished: left }, 'stopped with work still running');
        await actor.stop().catch((err: unknown) => deps.log.warn({ err, actor: name }, 'stop failed'));
      }
    },
  };
}

/** `--role actors:intent,sqlgen` → those names; `actors` → all. Unknown names throw. */
export function parseActorList(spec: string | undefined, all: readonly Actor[]): Actor[] {
  if (!spec) return [...all];
  const names = spec.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(all as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`unknown actor(s): ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return names as Actor[];
}
