/**
 * Starts a set of actors in one process and stops them in drain order: each stops taking
 * new messages, its in-flight handlers finish (up to the deadline), then it releases what it
 * holds.
 *
 * Every handler an actor serves is counted while it runs (requestsInFlight), so that a failure
 * nobody caught (cli/crash.ts) can name the requests it may belong to; a listener (bus.listen)
 * that throws is logged, not let through: the NATS client calls it from its reading loop, which
 * a throw would end for good.
 */
import type { Bus, Ctx } from '../../protocol/bus.js';
import type { Logger } from '../../protocol/log.js';
import type { Actor } from '../../protocol/subjects.js';
import type { Config } from '../../config/schema.js';
import { ACTOR_MODULES, DRAIN_ORDER, START_ORDER } from '../index.js';
import type { RunningActor } from './actor.js';

export interface ActorHost {
  readonly names: readonly Actor[];
  stop(deadline: number): Promise<void>;
}

/** A request whose handler runs in this process now. */
export interface RequestInFlight {
  rid: string;
  subj: string;
}

const inFlight = new Set<RequestInFlight>();

/** The requests whose handlers run in this process now (the oldest first). */
export function requestsInFlight(): RequestInFlight[] {
  return [...inFlight].map((r) => ({ ...r }));
}

/**
 * The bus as the actors see it: the same connection, with every handler counted in inFlight
 * while it runs (the bus itself turns whatever a handler throws into an error reply, and catches
 * a listener's throw).
 */
function countingBus(bus: Bus): Bus {
  const serve = ((def: { subject: string }, handler: (input: unknown, ctx: Ctx) => Promise<unknown>, opts?: { queue?: string }) =>
    bus.serve(def as never, (async (input: unknown, ctx: Ctx) => {
      const entry: RequestInFlight = { rid: ctx.requestId, subj: def.subject };
      inFlight.add(entry);
      try {
        return await handler(input, ctx);
      } finally {
        inFlight.delete(entry);
      }
    }) as never, opts)) as Bus['serve'];
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(bus, {
    get(target, prop) {
      if (prop === 'serve') return serve;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(prop);
      if (fn === undefined) bound.set(prop, (fn = (value as (...args: unknown[]) => unknown).bind(target)));
      return fn;
    },
  });
}

export async function startActors(names: readonly Actor[], deps: { bus: Bus; config: Config; log: Logger }): Promise<ActorHost> {
  const running: RunningActor[] = [];
  const ordered = START_ORDER.filter((n) => names.includes(n));
  const bus = countingBus(deps.bus);
  try {
    for (const name of ordered) {
      const mod = await ACTOR_MODULES[name]();
      running.push(await mod.start({ ...deps, bus, log: deps.log.child({ actor: name }) }));
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
