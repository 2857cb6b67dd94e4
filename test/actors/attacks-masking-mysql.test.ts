/**
 * The masking attack corpus (test/fixtures/attacks-masking.ts) on a real MariaDB, through the
 * executor and the masking actor over a real NATS, twice: as a user that may only SELECT in its
 * database, and as the privileged test login. Each attack's raw rows hold a secret; its masked
 * rows hold none (test/helpers/masking-corpus.ts). MariaDB compares table aliases with case
 * (lower_case_table_names 0 on Linux) and CTE names without: the corpus has both.
 */
import t from 'tap';
import { createLogger } from '../../runtime/log.js';
import { MASKING_ATTACKS_MYSQL, MASKING_SCHEMA_MYSQL } from '../fixtures/attacks-masking.js';
import { testConfig } from '../helpers/config.js';
import { runMaskingCorpus, startCorpusExecutors } from '../helpers/masking-corpus.js';
import { createMysqlUser, createTestMysqlDb } from '../helpers/mysql.js';
import { startNats } from '../helpers/nats.js';

const nats = await startNats();
const db = await createTestMysqlDb('attacks_mask');
await db.pool.query(MASKING_SCHEMA_MYSQL);
const reader = await createMysqlUser(db, [`GRANT SELECT ON \`${db.name}\`.* TO {user}`]);
const log = createLogger({ svc: 'test', level: 'silent' });

t.teardown(async () => {
  await reader.drop();
  await db.drop();
  await nats.stop();
});

for (const login of [
  { label: 'read-only', user: reader.user, password: reader.password, privileged: false },
  { label: 'privileged', user: db.user, password: db.password, privileged: true },
]) {
  t.test(`every masking attack, ${login.label}`, async (t) => {
    const config = testConfig({
      natsUrl: nats.url,
      extra: {
        database: { provider: 'mysql', allow_privileged_role: login.privileged, mysql: db.section({ user: login.user, password: login.password }) },
        query: { default_limit: 50, max_limit: 100, timeout: 10 },
      },
    });
    const running = await startCorpusExecutors(config, log, `attacks-mask-mysql-${login.label}`);
    t.teardown(() => running.stop(2_000));
    await runMaskingCorpus(t, running, 'mysql', MASKING_ATTACKS_MYSQL, `MariaDB ${login.label}`);
  });
}
