/** Prompt pieces shared by the actors that talk to the model (sqlgen, intent). */
import type { Dialect, Turn } from '../../protocol/schemas/common.js';
import type { LlmMessage } from '../../protocol/schemas/llm.js';

export const DIALECT_NAMES: Readonly<Record<Dialect, string>> = {
  postgresql: 'PostgreSQL',
  mysql: 'MySQL',
  trino: 'Trino',
  bigquery: 'BigQuery (GoogleSQL)',
};

/** The earlier turns of a conversation as alternating user/assistant messages. */
export function historyMessages(turns: readonly Turn[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  for (const t of turns) {
    out.push({ role: 'user', content: `Question: ${t.question}` });
    out.push({ role: 'assistant', content: formatAnswer(t) });
  }
  return out;
}

/** How a turn's answer is shown back to the model: in the reply format it is asked for. */
export function formatAnswer(t: Pick<Turn, 'sql' | 'answer'>): string {
  if (t.sql) {
    return `INTENT: sql\nSQL:\n\`\`\`sql\n${t.sql}\n\`\`\`${t.answer ? `\nEXPLANATION: ${t.answer}` : ''}`;
  }
  return `INTENT: chat\nMESSAGE: ${t.answer ?? ''}`;
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'] as const;

/** `2026-11-23 (Monday)`, in UTC. (Not toLocaleDateString: it costs ~50 µs a call.) */
export function today(now = new Date()): string {
  return `${now.toISOString().slice(0, 10)} (${WEEKDAYS[now.getUTCDay()]})`;
}
