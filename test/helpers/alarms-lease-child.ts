/**
 * One alarms process for the lease test (test/actors/alarms-lease.test.ts), run with
 * `node --import tsx alarms-lease-child.ts <nats url> <config extra as JSON> <clock file>`:
 * an alarms actor on its own bus connection, with the leader lease, reading the time its ticks
 * are due from <clock file> (epoch ms, written by the test). Its log goes to stdout, one JSON
 * line each, at debug; the test reads it and SIGKILLs the process as an operator's crash would.
 */
import { readFileSync } from 'node:fs';
import { Bus } from '../../runtime/bus.js';
import { createLogger } from '../../runtime/log.js';
import { startAlarms } from '../../actors/alarms/actor.js';
import { testConfig } from './config.js';

const [natsUrl, extra, clockFile] = process.argv.slice(2) as [string, string, string];
const log = createLogger({ svc: 'alarms-child', level: 'debug', destination: process.stdout });
const config = testConfig({ natsUrl, extra: JSON.parse(extra) as Record<string, unknown> });
const bus = await Bus.connect({ url: natsUrl, prefix: 'cortado', name: `alarms-child-${process.pid}`, log, strict: true });
await startAlarms({ bus, config, log }, { now: () => Number(readFileSync(clockFile, 'utf8')) });
