/**
 * The issue tracker (the `jira` section; Jira Cloud REST API v3): one issue per firing, a
 * comment when it resolves.
 *
 *   POST {url}/rest/api/3/issue                 fields: project {key}, issuetype {name}, priority
 *                                               {name}, summary, description (Atlassian Document
 *                                               Format), labels ["cortado-alarm"]   → 201 {id, key}
 *   POST {url}/rest/api/3/issue/{key}/comment   body (ADF)                          → 201
 *
 * Basic authentication with `email:api_token`. The token is read from the config in force (a
 * runtime override is kept sealed in config_db by the settings actor, like every secret key)
 * and never logged nor returned: failures name the status and the tracker's own message, which
 * never holds it. Each call has a deadline (CALL_TIMEOUT_MS).
 */
import { CortadoError } from '../../protocol/errors.js';
import type { Config } from '../../config/schema.js';
import { trackerProblem } from '../../config/ops-checks.js';

const CALL_TIMEOUT_MS = 15_000;
export const ISSUE_LABEL = 'cortado-alarm';

export type TrackerConfig = Config['jira'];

export { trackerProblem };

/** A paragraph-per-line ADF document (the v3 API's rich text). */
export function adf(lines: readonly string[]): Record<string, unknown> {
  return {
    type: 'doc',
    version: 1,
    content: lines.filter((l) => l !== '').map((l) => ({ type: 'paragraph', content: [{ type: 'text', text: l.slice(0, 30_000) }] })),
  };
}

export interface Tracker {
  createIssue(summary: string, lines: readonly string[]): Promise<string>;
  comment(key: string, lines: readonly string[]): Promise<void>;
}

const KEY = /^[A-Z][A-Z0-9_]*-[0-9]+$/;

export function jiraTracker(cfg: () => TrackerConfig, fetchImpl: typeof fetch = fetch, opts: { timeoutMs?: number } = {}): Tracker {
  const timeoutMs = opts.timeoutMs ?? CALL_TIMEOUT_MS;
  async function call(path: string, body: unknown): Promise<unknown> {
    const j = cfg();
    const problem = trackerProblem(j);
    if (problem) throw new CortadoError('CONFIG_INVALID', problem);
    const url = `${j.url.replace(/\/+$/, '')}${path}`;
    let res: Response;
    try {
      res = await fetchImpl(url, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${j.email}:${j.api_token}`).toString('base64')}`,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      const why = e.name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : (e.cause?.code ?? e.message);
      throw new CortadoError('ACTOR_UNAVAILABLE', `the issue tracker at ${new URL(url).origin} cannot be reached (${why})`);
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.ok) return parsed;
    if (res.status === 401) throw new CortadoError('UNAUTHORIZED', 'the issue tracker refused the credentials (401): check jira.email and jira.api_token');
    const p = (parsed ?? {}) as { errorMessages?: unknown; errors?: unknown };
    if (res.status === 403) {
      const said = Array.isArray(p.errorMessages) && p.errorMessages.length ? ` (${p.errorMessages.map(String).join('; ').slice(0, 300)})` : '';
      throw new CortadoError('FORBIDDEN', `the issue tracker refused (403): the account of jira.email may not do this in ${j.project_key}${said}`);
    }
    // Jira names the field it refuses; say which setting gave it
    const setting: Record<string, string> = { issuetype: `jira.issue_type is "${j.issue_type}"`, priority: `jira.priority is "${j.priority}"`, project: `jira.project_key is "${j.project_key}"` };
    const msgs = [
      ...(Array.isArray(p.errorMessages) ? p.errorMessages.map(String) : []),
      ...(p.errors && typeof p.errors === 'object' ? Object.entries(p.errors as Record<string, unknown>).map(([k, v]) => `${k}: ${String(v)}${setting[k] ? ` (${setting[k]})` : ''}`) : []),
    ];
    const said = (msgs.join('; ') || text.slice(0, 200)).slice(0, 500);
    throw new CortadoError(res.status >= 500 ? 'ACTOR_UNAVAILABLE' : 'VALIDATION_FAILED', `the issue tracker answered ${res.status}${said ? `: ${said}` : ''}`);
  }

  return {
    async createIssue(summary, lines) {
      const j = cfg();
      const out = (await call('/rest/api/3/issue', {
        fields: {
          project: { key: j.project_key },
          issuetype: { name: j.issue_type },
          ...(j.priority.trim() ? { priority: { name: j.priority } } : {}),
          summary: summary.replace(/[\r\n]+/g, ' ').slice(0, 254),
          description: adf(lines),
          labels: [ISSUE_LABEL],
        },
      })) as { key?: unknown } | undefined;
      const key = typeof out?.key === 'string' ? out.key : '';
      if (!KEY.test(key)) throw new CortadoError('VALIDATION_FAILED', 'the issue tracker created no issue key Cortado can read');
      return key;
    },
    async comment(key, lines) {
      if (!KEY.test(key)) throw new CortadoError('VALIDATION_FAILED', `"${key.slice(0, 40)}" is not an issue key`);
      await call(`/rest/api/3/issue/${encodeURIComponent(key)}/comment`, { body: adf(lines) });
    },
  };
}
