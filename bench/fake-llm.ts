/**
 * The scripted LLM for the benchmark, as its own process: every request answers at once
 * with the same SQL. Prints {"url": ...} when it listens.
 *   node --import tsx bench/fake-llm.ts <sql>
 */
import { sqlAnswer, startFakeLlm } from '../test/helpers/fake-llm.js';

const sql = process.argv[2] ?? 'SELECT 1';
const fake = await startFakeLlm();
fake.fallback(() => ({ text: sqlAnswer(sql, 'Twenty items by id.'), usage: { input_tokens: 600, output_tokens: 30 } }));
// the recorder would grow without bound under load
setInterval(() => { fake.requests.length = 0; }, 1_000).unref();
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.on('SIGTERM', () => { void fake.close().then(() => process.exit(0)); });
