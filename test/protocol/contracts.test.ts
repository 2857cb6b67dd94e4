import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ERRORS, McpMapping, isErrorCode } from '../../protocol/errors.js';
import { EVENTS, REQUESTS, progressSubject } from '../../protocol/subjects.js';
import { ROOT } from '../../config/load.js';

t.test('every error code has one HTTP status, one MCP mapping and a line in the error table of docs/http-api.md', async (t) => {
  const doc = readFileSync(path.join(ROOT, 'docs/http-api.md'), 'utf8');
  const mcp = new Set(Object.values(McpMapping));
  for (const [code, spec] of Object.entries(ERRORS)) {
    t.ok(isErrorCode(code));
    t.match(code, /^[A-Z][A-Z_]+$/);
    t.ok(spec.http >= 400 && spec.http < 600, `${code} has an HTTP error status`);
    t.ok(mcp.has(spec.mcp), `${code} maps to MCP`);
    const retryable = spec.retryable ? 'yes' : 'no';
    t.match(doc, new RegExp(`^\\|\\s*\`${code}\`\\s*\\|\\s*${spec.http}\\s*\\|\\s*${retryable}\\s*\\|`, 'm'), `docs/http-api.md documents ${code} with ${spec.http}, retryable ${retryable}`);
  }
  const documented = [...doc.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*\d{3}\s*\|/gm)].map((m) => m[1]);
  t.ok(documented.length >= Object.keys(ERRORS).length, 'the error table is there');
  for (const code of documented) t.ok(isErrorCode(code), `docs/http-api.md's ${code} exists in protocol/errors.ts`);
  t.notMatch(readFileSync(path.join(ROOT, 'README.md'), 'utf8'), /^\|\s*`[A-Z_]+`\s*\|\s*\d{3}\s*\|/m, 'README keeps no second error table to drift');
});

t.test('subjects are unique, well-formed and owned', async (t) => {
  const subjects = [...REQUESTS.map((r) => r.subject), ...EVENTS.map((e) => e.subject)];
  t.equal(new Set(subjects).size, subjects.length, 'no subject is defined twice');
  for (const r of REQUESTS) {
    t.notOk(r.subject.startsWith('evt.'));
    t.ok(r.owner.length > 0);
    t.ok(r.timeoutMs > 0);
  }
  for (const e of EVENTS) t.ok(e.subject.startsWith('evt.'));
  t.equal(progressSubject('3F2A-xyz'), 'progress.3f2a-xyz');
  t.equal(progressSubject('a.b*c>'), 'progress.a_b_c_');
});

/** Source files outside protocol/ that are ours. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (full.endsWith('.ts')) out.push(full);
  }
  return out;
}

t.test('no subject string or header name outside protocol/', async (t) => {
  const files = ['actors', 'store', 'edge', 'cli', 'config', 'bench'].flatMap((d) => {
    try { return sources(path.join(ROOT, d)); } catch { return []; }
  });
  t.ok(files.length > 10);
  const stray = /['"`](?:cortado\.[a-z]|evt\.[a-z]|progress\.|_INBOX|cortado-request-id|cortado-user|cortado-deadline|Nats-Msg-Id)/;
  for (const f of files) {
    const lines = readFileSync(f, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (stray.test(line)) t.fail(`${path.relative(ROOT, f)}:${i + 1} names a subject or header: ${line.trim()}`);
    });
  }
});
