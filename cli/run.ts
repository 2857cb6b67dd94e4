/**
 * One Cortado process: connect the bus (starting nats-server if needed), make sure the
 * event stream exists, start the chosen actors and the edge. `stop()` drains in order:
 * the edge (503 for new requests, in-flight answers finish), then the actors, then the bus.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Bus } from '../runtime/bus.js';
import { CortadoError } from '../protocol/errors.js';
import type { Logger } from '../runtime/log.js';
import { ALL_ACTORS, type Actor } from '../protocol/subjects.js';
import { ROOT } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { startActors, type ActorHost } from '../actors/runtime/host.js';
import { startEdge, type Edge } from '../edge/app.js';
import { loadStoredOverrides, startConfigSync } from './config-sync.js';
import { connectBus, stopChild } from './nats.js';
import { startMetricsListener, type MetricsListener } from './metrics-listener.js';
import { setMetricsEnabled } from '../runtime/metrics.js';
import { configureTracing, flushTracing, tracingEndpoint } from '../runtime/tracing.js';

export const VERSION: string = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export interface Roles {
  edge: boolean;
  actors: readonly Actor[];
}

export interface RunOptions {
  config: Config;
  roles: Roles;
  log: Logger;
  /** override the listen port (tests: 0) */
  port?: number;
  host?: string;
  name?: string;
}

export interface Running {
  bus: Bus;
  edge?: Edge;
  actors?: ActorHost;
  /** the metrics listener (metrics.listen) */
  metrics?: MetricsListener;
  stop(graceMs?: number): Promise<void>;
}

export async function runCortado(opts: RunOptions): Promise<Running> {
  const { config, roles, log } = opts;
  // a port someone else holds is said at once, by its key, before anything starts (it was found
  // only once every actor had started, ~20 s later, without naming app.port)
  if (roles.edge) await portAvailable(opts.host ?? config.app.host, opts.port ?? config.app.port, opts.port !== undefined ? '--port' : 'app.port');
  const name = opts.name ?? `cortado-${roles.edge ? 'edge' : 'actors'}-${process.pid}`;
  // metrics and traces are the process's (runtime/metrics.ts, runtime/tracing.ts)
  setMetricsEnabled(config.metrics.enabled);
  await configureTracing({
    endpoint: tracingEndpoint(config.tracing.otlp_endpoint),
    sampleRatio: config.tracing.sample_ratio,
    instance: name,
    roles: [...(roles.edge ? ['edge'] : []), ...roles.actors].join(','),
  });
  // only the one-process demo may start a broker of its own (cli/nats.ts)
  const whole = roles.edge && ALL_ACTORS.every((a) => roles.actors.includes(a));
  const { bus, child } = await connectBus(config, log, name, whole);
  let actors: ActorHost | undefined;
  let edge: Edge | undefined;
  let metrics: MetricsListener | undefined;
  let stopSync: (() => void) | undefined;
  let stopping: Promise<void> | undefined;
  try {
    await bus.ensureEventStream({ maxAgeMs: config.bus.events_max_age_days * 24 * 3600_000 });
    stopSync = startConfigSync(bus, config, log);
    if (!roles.actors.includes('settings')) await loadStoredOverrides(bus, config, log);
    if (roles.actors.length) actors = await startActors(roles.actors, { bus, config, log });
    // the actors' subscriptions are written in the next event-loop turn: a process is running only
    // once the server has them, or a request from another process right after gets "no responders"
    if (roles.actors.length) await bus.flush();
    if (roles.edge) {
      edge = await startEdge({ bus, config, log, version: VERSION, ...(opts.port !== undefined ? { port: opts.port } : {}), ...(opts.host ? { host: opts.host } : {}) });
    }
    if (config.metrics.enabled && config.metrics.listen) {
      const roleList = [...(roles.edge ? ['edge'] : []), ...roles.actors];
      metrics = await startMetricsListener(config.metrics.listen, log, () => {
        const b = bus.state();
        // the audit path: "bus up" is not enough when JetStream cannot store the events (issue 31)
        const audit = bus.auditTrouble();
        return {
          ok: stopping === undefined && b.state !== 'closed', degraded: audit !== undefined, roles: roleList, bus: b.state,
          ...(b.down_for_ms !== undefined ? { bus_down_for_ms: b.down_for_ms } : {}),
          audit: audit ? 'unavailable' : 'ok', ...(audit ? { audit_error: audit.message } : {}),
        };
      });
    }
  } catch (err) {
    await edge?.stop(Date.now()).catch(() => undefined);
    await actors?.stop(Date.now() + 1_000).catch(() => undefined);
    await bus.close().catch(() => undefined);
    await stopChild(child);
    throw err;
  }
  const running: Running = {
    bus,
    ...(edge ? { edge } : {}),
    ...(actors ? { actors } : {}),
    ...(metrics ? { metrics } : {}),
    stop(graceMs = config.app.shutdown_grace_seconds * 1_000) {
      stopping ??= (async () => {
        const deadline = Date.now() + graceMs;
        await edge?.stop(deadline);
        await actors?.stop(deadline);
        stopSync?.();
        // durable events still waiting for JetStream get what is left of the grace
        await bus.close(deadline);
        await stopChild(child);
        await metrics?.close();
        await flushTracing();
      })();
      return stopping;
    },
  };
  return running;
}

/** Refuses (CONFIG_INVALID, exit 2) when `port` cannot be bound on `host`, naming the key it came from. */
async function portAvailable(host: string, port: number, key: string): Promise<void> {
  if (port === 0) return;
  const srv = net.createServer();
  const err = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    srv.once('error', (e: NodeJS.ErrnoException) => resolve(e));
    srv.listen({ host, port, exclusive: true }, () => resolve(undefined));
  });
  await new Promise<void>((r) => (srv.listening ? srv.close(() => r()) : r()));
  if (!err) return;
  const why = err.code === 'EADDRINUSE'
    ? `${host}:${port} is in use (another Cortado, or another program, listens there): stop it, or set ${key} to a free port`
    : err.code === 'EACCES'
      ? `${host}:${port} needs privileges this process does not have: set ${key} to a port above 1023`
      : `cannot listen on ${host}:${port} (${err.code ?? err.message}): check ${key}${key === 'app.port' ? ' and app.host' : ''}`;
  throw new CortadoError('CONFIG_INVALID', `${key}: ${why}`);
}
