/**
 * A local server speaking the part of the Jira Cloud REST API v3 the alarms use, over real HTTP:
 *
 *   POST /rest/api/3/issue                 create an issue → 201 {id, key, self}
 *   POST /rest/api/3/issue/{key}/comment   add a comment   → 201 {id, body, created}
 *   GET  /rest/api/3/issue/{key}           the issue with its comments (for tests to read)
 *
 * Every call needs Basic authentication with the email and API token it was started with (else
 * 401 with Jira's body); a create is checked as Jira does: a known project key (else 400
 * {errors: {project}}), an issue type and priority the project has, a summary, and a
 * description in Atlassian Document Format (`{type: 'doc', version: 1, content}`).
 *
 * `fake.failWith = 'forbidden'` answers every authenticated call 403 as Jira does for an account
 * without the permission; `'hang'` never answers (a tracker that times out); `undefined` again
 * serves normally.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeJiraIssue {
  id: string;
  key: string;
  fields: { project: string; issuetype: string; priority?: string; summary: string; description: any; labels: string[] };
  comments: Array<{ id: string; body: any }>;
}

export interface FakeJira {
  url: string;
  issues: FakeJiraIssue[];
  /** requests refused for bad credentials */
  unauthorized: number;
  /** every `METHOD path`, in order */
  calls: string[];
  /** the Authorization headers seen (a test checks the token never appears elsewhere) */
  authHeaders: string[];
  /** how every authenticated call fails from now on (undefined: it does not) */
  failWith: 'forbidden' | 'hang' | undefined;
  close(): Promise<void>;
}

export interface FakeJiraOptions {
  email: string;
  apiToken: string;
  projectKey: string;
  issueTypes?: string[];
  priorities?: string[];
}

function isAdf(doc: any): boolean {
  return doc && doc.type === 'doc' && doc.version === 1 && Array.isArray(doc.content)
    && doc.content.every((n: any) => n && typeof n.type === 'string' && (n.content === undefined || Array.isArray(n.content)));
}

export async function startFakeJira(opts: FakeJiraOptions): Promise<FakeJira> {
  const issueTypes = opts.issueTypes ?? ['Bug', 'Task', 'Incident'];
  const priorities = opts.priorities ?? ['Highest', 'High', 'Medium', 'Low'];
  const expected = `Basic ${Buffer.from(`${opts.email}:${opts.apiToken}`).toString('base64')}`;
  const state = { issues: [] as FakeJiraIssue[], unauthorized: 0, calls: [] as string[], authHeaders: [] as string[], failWith: undefined as FakeJira['failWith'] };
  let seq = 10000;
  let commentSeq = 1;

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      state.calls.push(`${req.method} ${path}`);
      state.authHeaders.push(req.headers.authorization ?? '');
      if (req.headers.authorization !== expected) {
        state.unauthorized++;
        // what Jira Cloud answers for a wrong email or token
        send(res, 401, { errorMessages: ['Client must be authenticated to access this resource.'], errors: {} });
        return;
      }
      if (state.failWith === 'hang') return; // never answered: the caller's deadline ends it
      if (state.failWith === 'forbidden') {
        send(res, 403, { errorMessages: ['You do not have permission to create issues in this project.'], errors: {} });
        return;
      }
      let body: any;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      } catch {
        send(res, 400, { errorMessages: ['Unexpected character in the JSON body'], errors: {} });
        return;
      }
      if (req.method === 'POST' && path === '/rest/api/3/issue') {
        const f = body?.fields ?? {};
        const errors: Record<string, string> = {};
        if (f.project?.key !== opts.projectKey) errors.project = 'Specify a valid project ID or key';
        if (!issueTypes.includes(f.issuetype?.name)) errors.issuetype = 'Specify a valid issue type';
        if (f.priority !== undefined && !priorities.includes(f.priority?.name)) errors.priority = 'Specify the Priority (name) in the string format';
        if (typeof f.summary !== 'string' || f.summary.trim() === '') errors.summary = 'You must specify a summary of the issue.';
        else if (f.summary.length > 255) errors.summary = 'Summary must be less than 255 characters.';
        if (f.description !== undefined && !isAdf(f.description)) errors.description = 'Operation value must be an Atlassian Document (see the Atlassian Document Format)';
        if (Object.keys(errors).length) {
          send(res, 400, { errorMessages: [], errors });
          return;
        }
        const id = String(++seq);
        const key = `${opts.projectKey}-${state.issues.length + 1}`;
        state.issues.push({
          id, key, comments: [],
          fields: { project: f.project.key, issuetype: f.issuetype.name, ...(f.priority ? { priority: f.priority.name } : {}), summary: f.summary, description: f.description, labels: f.labels ?? [] },
        });
        send(res, 201, { id, key, self: `http://${req.headers.host}/rest/api/3/issue/${id}` });
        return;
      }
      const comment = /^\/rest\/api\/3\/issue\/([^/]+)\/comment$/.exec(path);
      if (req.method === 'POST' && comment) {
        const issue = state.issues.find((i) => i.key === decodeURIComponent(comment[1] ?? ''));
        if (!issue) {
          send(res, 404, { errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} });
          return;
        }
        if (!isAdf(body?.body)) {
          send(res, 400, { errorMessages: [], errors: { comment: 'Comment body can not be empty!' } });
          return;
        }
        const c = { id: String(commentSeq++), body: body.body };
        issue.comments.push(c);
        send(res, 201, { ...c, created: new Date().toISOString() });
        return;
      }
      const get = /^\/rest\/api\/3\/issue\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && get) {
        const issue = state.issues.find((i) => i.key === decodeURIComponent(get[1] ?? ''));
        if (!issue) send(res, 404, { errorMessages: ['Issue does not exist or you do not have permission to see it.'], errors: {} });
        else send(res, 200, { id: issue.id, key: issue.key, fields: { ...issue.fields, comment: { comments: issue.comments } } });
        return;
      }
      send(res, 404, { errorMessages: [`no route for ${req.method} ${path}`], errors: {} });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get issues() { return state.issues; },
    get unauthorized() { return state.unauthorized; },
    get calls() { return state.calls; },
    get authHeaders() { return state.authHeaders; },
    get failWith() { return state.failWith; },
    set failWith(v) { state.failWith = v; },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** The plain text of an ADF document (paragraphs joined by newlines). */
export function adfText(doc: any): string {
  return (doc?.content ?? []).map((p: any) => (p.content ?? []).map((n: any) => n.text ?? '').join('')).join('\n');
}
