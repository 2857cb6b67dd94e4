/**
 * `cortado` — one command for every role.
 *
 *   cortado                                  edge + every actor in one process
 *   cortado --role edge                      only the HTTP edge
 *   cortado --role actors                    every actor, no HTTP
 *   cortado --role actors:executor,llm       some actors (repeat --role to combine)
 *   cortado tap                              print the live event flow
 *   cortado eval FILE                        golden questions through the pipeline: accuracy
 *   options: --config FILE (or CORTADO_CONFIG), --port N, --help
 */
import { CortadoError } from '../protocol/errors.js';
import { createLogger } from '../runtime/log.js';
import { ALL_ACTORS, type Actor } from '../protocol/subjects.js';
import { loadConfigFile, resolveConfigPath } from '../config/load.js';
import { parseActorList } from '../actors/runtime/host.js';
import { containCrashes } from './crash.js';
import { runCortado, VERSION, type Roles } from './run.js';
import { runTap } from './tap.js';

const HELP = `cortado ${VERSION} — ask your database questions in plain language

usage:
  cortado [--config FILE] [--role ROLE]... [--port N]
  cortado tap [--config FILE] [--json]
  cortado eval FILE [--config FILE] [--json] [--min-accuracy X] [--in-process]

roles:
  all (default)            the edge and every actor
  edge                     the HTTP edge only
  actors                   every actor
  actors:a,b,...           some actors: ${ALL_ACTORS.join(', ')}

The config file is config/config.yaml unless --config or CORTADO_CONFIG says otherwise.`;

export function parseRoles(argv: readonly string[]): Roles {
  const specs: string[] = [];
  argv.forEach((a, i) => {
    if (a === '--role' && argv[i + 1]) specs.push(argv[i + 1]!);
    else if (a.startsWith('--role=')) specs.push(a.slice('--role='.length));
  });
  if (specs.length === 0 || specs.includes('all')) return { edge: true, actors: [...ALL_ACTORS] };
  let edge = false;
  const actors = new Set<Actor>();
  for (const spec of specs) {
    if (spec === 'edge') edge = true;
    else if (spec === 'actors') ALL_ACTORS.forEach((a) => actors.add(a));
    else if (spec.startsWith('actors:')) parseActorList(spec.slice('actors:'.length), ALL_ACTORS).forEach((a) => actors.add(a));
    else throw new Error(`unknown role "${spec}" (use all, edge, actors or actors:a,b)`);
  }
  return { edge, actors: [...actors] };
}

function option(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  // the stdio bridge needs no config file: it talks to a running service (cli/mcp-stdio.ts)
  if (argv[0] === 'mcp-stdio') return (await import('./mcp-stdio.js')).runMcpStdio();
  const file = resolveConfigPath(argv);
  let loaded;
  try {
    loaded = loadConfigFile(file);
  } catch (err) {
    process.stderr.write(`cortado: ${err instanceof CortadoError ? err.message : String(err)}\n`);
    return 2;
  }
  const { config } = loaded;
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'run';
  if (command === 'tap') return runTap(config, argv.includes('--json'));
  if (command === 'eval') return (await import('./eval.js')).runEvalCommand(config, argv);
  if (command !== 'run') {
    process.stderr.write(`cortado: unknown command "${command}"\n\n${HELP}\n`);
    return 2;
  }

  let roles: Roles;
  try {
    roles = parseRoles(argv);
  } catch (err) {
    process.stderr.write(`cortado: ${(err as Error).message}\n`);
    return 2;
  }
  const log = createLogger({ svc: roles.edge && roles.actors.length === 0 ? 'edge' : roles.edge ? 'cortado' : 'actors', level: config.app.debug ? 'debug' : config.app.log_level });
  for (const w of loaded.warnings) log.warn({ config: file }, w);
  const portArg = option(argv, '--port');
  // a throw from a callback nobody awaits, or a rejection nobody handles, is logged, not fatal (cli/crash.ts)
  let running: Awaited<ReturnType<typeof runCortado>> | undefined;
  containCrashes({ log, requestsInFlight: () => running?.bus.requestsInFlight() ?? [] });

  try {
    running = await runCortado({ config, roles, log, ...(portArg !== undefined ? { port: Number(portArg) } : {}) });
  } catch (err) {
    const message = err instanceof CortadoError ? err.message : (err as Error).message;
    log.fatal({ err: err instanceof CortadoError ? undefined : err }, message);
    process.stderr.write(`cortado: ${message}\n`);
    // a configuration the process cannot run with (a privileged database role, a missing key): 2, as for a bad file
    return err instanceof CortadoError && err.code === 'CONFIG_INVALID' ? 2 : 1;
  }

  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals): void => {
      signals++;
      if (signals > 1) {
        log.warn({ sig }, 'second signal: exiting now');
        resolve(1);
        return;
      }
      log.info({ sig, graceSeconds: config.app.shutdown_grace_seconds }, 'shutting down: finishing in-flight work');
      running.stop().then(
        () => { log.info('stopped'); resolve(0); },
        (err: unknown) => { log.error({ err }, 'shutdown failed'); resolve(1); },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
