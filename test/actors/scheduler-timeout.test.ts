/**
 * scheduler.job_timeout_seconds is capped by the query timeout (query.timeout, or the
 * provider's own `timeout`): the configuration warns at load when the job timeout is over it,
 * and a run's failure message names the timeout that actually stopped the query.
 */
import t from 'tap';
import YAML from 'yaml';
import { advice, parseConfig } from '../../config/load.js';
import { timeoutMessage } from '../../actors/scheduler/run.js';
import { testConfig, testConfigObject } from '../helpers/config.js';

const cfg = (extra: Record<string, unknown>) => testConfig({ natsUrl: 'nats://127.0.0.1:1', extra });

t.test('a job timeout over the query timeout is warned about at load, naming both', async (t) => {
  t.same(advice(cfg({ query: { timeout: 60 }, scheduler: { job_timeout_seconds: 60 } })), [], 'equal: nothing to say');
  t.same(advice(cfg({ query: { timeout: 300 }, scheduler: { job_timeout_seconds: 30 } })), [], 'under: nothing to say');
  const [w] = advice(cfg({ query: { timeout: 60 }, scheduler: { job_timeout_seconds: 300 } }));
  t.match(w, /^scheduler\.job_timeout_seconds \(300 s\) is over query\.timeout \(60 s\), the ceiling of every query: a scheduled query is cancelled after 60 s/);
  const [p] = advice(cfg({ query: { timeout: 600 }, database: { postgresql: { timeout: 30 } }, scheduler: { job_timeout_seconds: 120 } }));
  t.match(p, /is over database\.postgresql\.timeout \(30 s\)/, 'the provider\'s own timeout is the ceiling when set');
});

t.test('loading a file: warned when the file sets the job timeout over the query timeout, not for the default', async (t) => {
  const load = (extra: Record<string, unknown>) => parseConfig(YAML.stringify(testConfigObject({ natsUrl: 'nats://127.0.0.1:1', extra })), 'x.yaml', {}).warnings;
  t.match(load({ query: { timeout: 60 }, scheduler: { job_timeout_seconds: 600 } }), [/^scheduler\.job_timeout_seconds \(600 s\) is over query\.timeout \(60 s\)/]);
  t.same(load({ query: { timeout: 60 }, scheduler: { enabled: true } }), [], 'the default (300 s) under a lower query.timeout: the documented cap, no warning');
  t.same(load({ query: { timeout: 600 }, scheduler: { job_timeout_seconds: 300 } }), []);
});

t.test('the failure message says the timeout that applied', async (t) => {
  const under = cfg({ query: { timeout: 60 }, scheduler: { job_timeout_seconds: 8 } });
  t.equal(timeoutMessage(under, 8_000), 'The query ran longer than the job timeout (scheduler.job_timeout_seconds: 8 s) and was cancelled on the database.');
  const over = cfg({ query: { timeout: 60 }, scheduler: { job_timeout_seconds: 300 } });
  t.equal(timeoutMessage(over, 60_000), 'The query ran longer than the query timeout (query.timeout: 60 s) and was cancelled on the database. '
    + 'scheduler.job_timeout_seconds (300 s) is over it, and no query runs longer than query.timeout.');
  t.match(timeoutMessage(over, undefined), /query timeout \(query\.timeout: 60 s\)/, 'without the executor\'s figure: the smaller of the two');
  const provider = cfg({ database: { postgresql: { timeout: 20 } }, scheduler: { job_timeout_seconds: 300 } });
  t.match(timeoutMessage(provider, 20_000), /database\.postgresql\.timeout: 20 s/);
  t.match(timeoutMessage(under, 2_500), /the time the run had left \(2\.5 s; scheduler\.job_timeout_seconds: 8 s\)/);
});
