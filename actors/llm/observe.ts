/**
 * A model call as operators see it: a span under the llm.complete span (runtime/tracing.ts:
 * provider, model, task, tokens — never the prompt or the answer) and the model metrics
 * (runtime/metrics.ts: calls, tokens, cost, errors, latency by provider and model).
 */
import type { Ctx } from '../../protocol/headers.js';
import { toCortadoError } from '../../protocol/errors.js';
import { observeModelCall } from '../../runtime/metrics.js';
import { inSpan, SpanAttr } from '../../runtime/tracing.js';
import type { LlmCompleteReply, LlmCompleteRequest } from '../../protocol/schemas/llm.js';
import type { Config } from '../../config/schema.js';
import { resolveRoute } from '../../config/model-routing.js';

export async function observedCall(
  input: LlmCompleteRequest,
  config: Config,
  ctx: Ctx,
  call: (ctx: Ctx) => Promise<LlmCompleteReply>,
): Promise<LlmCompleteReply> {
  let provider: string = config.llm.provider;
  let model = '';
  try {
    const route = resolveRoute(config, input.task);
    provider = route.provider;
    model = route.model;
  } catch {
    // the call itself says what is wrong with the route
  }
  const attrs = { 'gen_ai.operation.name': 'chat', 'gen_ai.system': provider, 'gen_ai.request.model': model, [SpanAttr.Task]: input.task };
  return inSpan(`llm ${provider}`, ctx, 'client', attrs, async (c, span) => {
    const started = performance.now();
    try {
      const reply = await call(c);
      observeModelCall({ provider: reply.provider, model: reply.model, seconds: (performance.now() - started) / 1000, usage: reply.usage });
      span?.set({
        'gen_ai.response.model': reply.model,
        'gen_ai.usage.input_tokens': reply.usage.input_tokens,
        'gen_ai.usage.output_tokens': reply.usage.output_tokens,
        [SpanAttr.Attempts]: reply.attempts,
      });
      return reply;
    } catch (err) {
      observeModelCall({ provider, model, seconds: (performance.now() - started) / 1000, code: toCortadoError(err).code });
      throw err;
    }
  });
}
