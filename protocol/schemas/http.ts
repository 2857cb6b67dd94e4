/** Bodies of the public HTTP API (validated at the edge, before anything reaches the bus). */
import Type, { type Static } from 'typebox';
import { AskRequest } from './ask.js';

const Question = AskRequest.properties.question;
const Tables = AskRequest.properties.tables;
const ConversationId = AskRequest.properties.conversation_id;

/** POST /api/query */
export const ApiQueryBody = Type.Object({
  question: Question,
  tables: Tables,
  conversation_id: ConversationId,
});
export type ApiQueryBody = Static<typeof ApiQueryBody>;

/** POST /query (SQLatte-compatible): `session_id` is the conversation; `table_schema` is a hint only. */
export const LegacyQueryBody = Type.Object({
  question: Question,
  table_schema: Type.Optional(Type.String({ maxLength: 200_000 })),
  schema: Type.Optional(Type.String({ maxLength: 200_000 })),
  tables: Tables,
  session_id: Type.Optional(Type.Union([ConversationId, Type.Null()])),
});
export type LegacyQueryBody = Static<typeof LegacyQueryBody>;
