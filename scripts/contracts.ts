/**
 * `npm run contracts`: writes docs/openapi.json and docs/asyncapi.json, the published contracts,
 * as a real edge serves them (GET /openapi.json, GET /asyncapi.json) with the shipped
 * config/config.yaml (environment ignored) and every optional part on (the admin panel,
 * plugins.auth). It starts a private nats-server for the edge (no actor runs; nothing is asked
 * of the bus). test/protocol/contracts.test.ts fails when the files drift from this.
 *
 *   npm run contracts            write both files
 *   npm run contracts -- --check exit 1 when either file differs from what the code makes
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import YAML from 'yaml';
import { DEFAULT_CONFIG_PATH, ROOT, parseConfig } from '../config/load.js';
import { startEdge } from '../edge/app.js';
import { Bus } from '../runtime/bus.js';
import { createLogger } from '../runtime/log.js';
import { startNats } from '../test/helpers/nats.js';

export const CONTRACT_FILES = { openapi: 'docs/openapi.json', asyncapi: 'docs/asyncapi.json' } as const;

type Plain = Record<string, unknown>;

function merge(a: Plain, b: Plain): Plain {
  const out: Plain = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur) ? merge(cur as Plain, v as Plain) : v;
  }
  return out;
}

/** The configuration the published documents describe: the shipped file, every optional route on. */
export function contractsConfigText(natsUrl: string): string {
  const shipped = YAML.parse(readFileSync(DEFAULT_CONFIG_PATH, 'utf8')) as Plain;
  return YAML.stringify(merge(shipped, {
    app: { host: '127.0.0.1', port: 0, log_level: 'silent' },
    bus: { url: natsUrl, prefix: 'cortado', autostart: false },
    admin: { enabled: true, password: 'contracts-only' },
    plugins: { auth: { enabled: true } },
  }));
}

/** Both documents, formatted as the files hold them (two-space JSON, a final line break), and the edge's routes. */
export async function generateContracts(): Promise<{ openapi: string; asyncapi: string; routes: Array<{ method: string; pattern: string }> }> {
  const nats = await startNats({ jetstream: false });
  const log = createLogger({ svc: 'contracts', level: 'silent' });
  let bus: Bus | undefined;
  try {
    const { config } = parseConfig(contractsConfigText(nats.url), 'contracts-config.yaml', {});
    bus = await Bus.connect({ url: nats.url, prefix: config.bus.prefix, name: 'cortado-contracts', log });
    const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const edge = await startEdge({ bus, config, log, version, host: '127.0.0.1', port: 0 });
    try {
      const get = async (p: string): Promise<string> => {
        const res = await fetch(`http://127.0.0.1:${edge.port}${p}`);
        if (res.status !== 200) throw new Error(`GET ${p} answered ${res.status}: ${await res.text()}`);
        return `${JSON.stringify(await res.json(), null, 2)}\n`;
      };
      return { openapi: await get('/openapi.json'), asyncapi: await get('/asyncapi.json'), routes: edge.routes.map((r) => ({ method: r.method, pattern: r.pattern })) };
    } finally {
      await edge.stop(Date.now() + 1_000);
    }
  } finally {
    await bus?.close().catch(() => undefined);
    await nats.stop();
  }
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const docs = await generateContracts();
  let stale = 0;
  for (const [key, file] of Object.entries(CONTRACT_FILES) as Array<[keyof typeof CONTRACT_FILES, string]>) {
    const full = path.join(ROOT, file);
    let current = '';
    try { current = readFileSync(full, 'utf8'); } catch { /* not written yet */ }
    if (current === docs[key]) {
      console.log(`${file}: up to date`);
      continue;
    }
    if (check) {
      console.log(`${file}: out of date (run npm run contracts)`);
      stale++;
    } else {
      writeFileSync(full, docs[key]);
      console.log(`${file}: written`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
