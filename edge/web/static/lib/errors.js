// What an error means to the person who met it: one sentence in their words and what to try,
// per error code (protocol/errors.ts). The code, the server's own message, the request id and
// the SQL stay one click away (lib/dom.js errorBox), for whoever helps them.

/** code → [what happened, what to try] */
const SAID = {
  SQL_REJECTED: ['The query written for this question is not allowed to run here, so nothing was run.', 'Ask for what you want to see rather than to change: this assistant only reads data.'],
  DB_QUERY_FAILED: ['The database could not run the query written for this question.', 'Try again in other words, using the names you see in your data (a table or column), or ask something simpler.'],
  DB_TIMEOUT: ['The query took too long and was stopped.', 'Ask for less at once: a shorter period, fewer groups, or a total instead of every row.'],
  DB_UNAVAILABLE: ['The database cannot be reached right now.', 'Try again in a minute. If it keeps happening, tell your administrator.'],
  RESULT_TOO_LARGE: ['The answer is too large to show.', 'Ask for fewer rows or columns, for example a total or the top 100.'],
  LIMIT_EXCEEDED: ['This goes past a limit your administrator has set.', 'Ask for less at once, for example fewer rows or a shorter period.'],
  LLM_UNAVAILABLE: ['The model that writes the queries cannot be reached right now.', 'Try again in a minute. If it keeps happening, tell your administrator.'],
  LLM_BAD_REPLY: ['The model answered in a way that could not be used.', 'Ask again, perhaps in other words.'],
  TIMEOUT: ['This took too long to answer.', 'Try again, or ask something narrower.'],
  RATE_LIMITED: ['Too many requests in a short time.', 'Wait a moment, then try again.'],
  UNAUTHORIZED: ['You need to sign in for this.', 'Sign in, then try again.'],
  FORBIDDEN: ['You are not allowed to do this.', 'If you need it, ask your administrator for access.'],
  NOT_FOUND: ['This could not be found.', 'It may have been removed or renamed.'],
  CONFLICT: ['This changed in the meantime.', 'Reload the page and try again.'],
  CONFIRMATION_REQUIRED: ['This query waits for you to confirm it.', 'Look at the query, then confirm it to run it.'],
  VALIDATION_FAILED: ['The request could not be read as it is.', 'Check what you typed and try again.'],
  MALFORMED_BODY: ['The request could not be read as it is.', 'Reload the page and try again.'],
  PAYLOAD_TOO_LARGE: ['This is too long to send.', 'Shorten the question and try again.'],
  NETWORK: ['The server could not be reached.', 'Check your connection, then try again.'],
  UNAVAILABLE: ['This part of the page could not be loaded.', 'Reload the page. If it keeps happening, tell your administrator.'],
};
const SERVER = ['Something went wrong on the server.', 'Try again in a minute. If it keeps happening, give your administrator the details below.'];
const WRITE = /only a SELECT query may run/i;

/**
 * One error in words for people: `{title, hint}` for an error model body `{code, message}`.
 * A statement that would change data says so (the guard's message names it); any code not
 * listed above is the server's trouble, never the user's.
 */
export function errorWords(e) {
  const code = String(e?.code ?? '');
  if (code === 'SQL_REJECTED' && WRITE.test(String(e?.message ?? ''))) {
    return { title: 'This question asks to change data, and here you can only read it: nothing was changed.', hint: 'Ask for what you want to see instead, for example “how many orders were placed last month?”.' };
  }
  const [title, hint] = SAID[code] ?? SERVER;
  return { title, hint };
}
