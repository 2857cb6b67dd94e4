/**
 * The masking attack corpus (test/fixtures/attacks-masking.ts) through the BigQuery stand-in (a
 * REST server answering from a real PostgreSQL, BigQuery's JSON functions as PostgreSQL
 * functions there), the real @google-cloud/bigquery SDK, the executor and the masking actor over
 * a real NATS. Each attack's raw rows hold a secret; its masked rows hold none
 * (test/helpers/masking-corpus.ts). The stand-in resolves names as PostgreSQL does (a backquoted
 * `CUSTOMERS` is another name), the strictest a BigQuery dataset can be.
 */
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { MASKING_ATTACKS_BIGQUERY, MASKING_SCHEMA_BIGQUERY } from '../fixtures/attacks-masking.js';
import { testConfig } from '../helpers/config.js';
import { startFakeBigQuery } from '../helpers/fake-bigquery.js';
import { runMaskingCorpus, startCorpusExecutors } from '../helpers/masking-corpus.js';
import { startNats } from '../helpers/nats.js';
import { createTestDb } from '../helpers/pg.js';

// keeps google-auth-library from probing for a GCE metadata server (test process only)
process.env.METADATA_SERVER_DETECTION = 'none';

const PROJECT = 'cortado-test';
const nats = await startNats();
const db = await createTestDb('attacks_mask_bq');
await db.pool.query(MASKING_SCHEMA_BIGQUERY);
const fake = await startFakeBigQuery({ databaseUrl: db.url, projectId: PROJECT });
const log = createLogger({ svc: 'test', level: 'silent' });
const config = testConfig({
  natsUrl: nats.url,
  extra: {
    database: {
      provider: 'bigquery',
      bigquery: { project_id: PROJECT, dataset: 'shop', location: 'US', credentials_json: JSON.stringify(fake.serviceAccount()), base_url: fake.url, timeout: 10 },
    },
    query: { default_limit: 50, max_limit: 100, timeout: 10 },
  },
});
const running = await startCorpusExecutors(config, log, 'attacks-mask-bq');

t.teardown(async () => {
  await running.stop(2_000);
  await fake.close();
  await db.drop();
  await nats.stop();
});

t.test('every masking attack, through the BigQuery stand-in', async (t) => {
  await runMaskingCorpus(t, running, 'bigquery', MASKING_ATTACKS_BIGQUERY, 'BigQuery');
});
