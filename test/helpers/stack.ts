/**
 * Cortado in the test process: the same runCortado the `cortado` command uses, on a private
 * NATS, listening on 127.0.0.1 and a free port.
 */
import type { Config } from '../../config/schema.js';
import { createLogger } from '../../runtime/log.js';
import { ALL_ACTORS } from '../../protocol/subjects.js';
import { runCortado, type Roles, type Running } from '../../cli/run.js';

export interface Stack {
  url: string;
  running: Running;
  stop(): Promise<void>;
}

export async function startStack(config: Config, roles: Roles = { edge: true, actors: [...ALL_ACTORS] }): Promise<Stack> {
  const log = createLogger({ svc: 'test', level: process.env.CORTADO_TEST_LOG ?? 'silent' });
  const running = await runCortado({ config, roles, log, port: 0, host: '127.0.0.1', name: 'test' });
  const url = running.edge ? `http://127.0.0.1:${running.edge.port}` : '';
  return { url, running, stop: () => running.stop(3_000) };
}

/** fetch + JSON, returning status, headers and parsed body. */
export async function call(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const headers: Record<string, string> = { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers };
  const res = await fetch(url, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? 'POST' : 'GET'),
    headers,
    body: init.raw ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined),
  });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** POST with Accept: text/event-stream; returns the parsed events in order. */
export async function callSse(url: string, body: unknown): Promise<{ status: number; events: Array<{ event: string; data: any; id?: string }> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify(body) });
  const text = await res.text();
  const events: Array<{ event: string; data: any; id?: string }> = [];
  for (const block of text.split('\n\n')) {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      else if (line.startsWith('id:')) id = line.slice(3).trim();
    }
    if (data.length) events.push({ event, data: JSON.parse(data.join('\n')), ...(id ? { id } : {}) });
  }
  return { status: res.status, events };
}
