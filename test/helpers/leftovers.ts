/**
 * The servers a test file starts end with it, however it ends: a set-up that throws before its
 * teardown is registered, an uncaught error, tap's timeout. Each helper hands its child process
 * here the moment it is spawned; when the test process exits, whatever still runs is SIGKILLed
 * (an exit handler can only do synchronous work, and a kill is). A child that ended is dropped.
 * Before this, three failed runs left six cortado processes, three nats-servers and a
 * PostgreSQL behind (issue 26).
 */
import type { ChildProcess } from 'node:child_process';

const running = new Set<ChildProcess>();
let installed = false;

/** `child`, killed when this process exits if it still runs then. */
export function endWithProcess<C extends ChildProcess>(child: C): C {
  if (!installed) {
    installed = true;
    process.on('exit', () => {
      for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    });
  }
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}
