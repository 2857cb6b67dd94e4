/**
 * GET /health: status, version, database, llm. Cheap by design: the database is pinged
 * through the executor's pool with a short timeout; the LLM is only asked whether it is
 * configured and how its latest calls went — never a paid model call. A model whose last call
 * failed after its retries (and none succeeded since) is `unreachable`: the service is
 * `degraded`, not down (the database and everything without the model still work), until a
 * call gets an answer again.
 * `audit`: whether the audit trail can be written
 * (Bus.auditTrouble: the event stream kept, the outbox not full, no refusal heard lately); while
 * it cannot, questions are refused (audit.required), so the status is never `ok` then.
 */
import type { Bus } from '../../../runtime/bus.js';
import { LlmStatus, SqlPing } from '../../../protocol/subjects.js';
import { sendJson } from '../reply.js';
import type { Router } from '../router.js';

export function healthRoutes(router: Router, deps: { bus: Bus; version: string; closing: () => boolean }): void {
  router.get('/health', { auth: 'none', summary: 'Liveness and readiness: the bus, the database, the model and the audit trail (503 while closing)' }, async (_req, res, ctx) => {
    const c = { requestId: ctx.rid };
    const [db, llm] = await Promise.allSettled([
      deps.bus.request(SqlPing, {}, c, { timeoutMs: 2_000 }),
      deps.bus.request(LlmStatus, {}, c, { timeoutMs: 1_000 }),
    ]);
    const details: Record<string, unknown> = {};
    let database: string;
    if (db.status === 'fulfilled') {
      database = db.value.ok ? 'ok' : 'unavailable';
      details.database = { provider: db.value.provider, latency_ms: db.value.latency_ms, ...(db.value.error ? { error: db.value.error } : {}) };
    } else {
      database = 'unavailable';
      details.database = { error: (db.reason as Error).message };
    }
    let llmState: string;
    if (llm.status === 'fulfilled') {
      const v = llm.value;
      llmState = !v.configured ? 'not_configured' : v.reachable === false ? 'unreachable' : 'ok';
      details.llm = {
        provider: v.provider, model: v.model, ...(v.reason ? { reason: v.reason } : {}),
        ...(v.reachable === false ? { failing_since: v.failing_since, last_error: v.last_error } : {}),
      };
    } else {
      llmState = 'unavailable';
      details.llm = { error: (llm.reason as Error).message };
    }
    const auditTrouble = deps.bus.auditTrouble();
    const audit = auditTrouble ? 'unavailable' : 'ok';
    if (auditTrouble) details.audit = { error: auditTrouble.message, ...(auditTrouble.details ?? {}) };
    const status = deps.closing() ? 'shutting_down' : database === 'ok' && llmState === 'ok' && audit === 'ok' ? 'ok' : 'degraded';
    sendJson(res, deps.closing() ? 503 : 200, { status, version: deps.version, database, llm: llmState, audit, details }, ctx.rid);
  });
}
