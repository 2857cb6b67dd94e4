import Type, { type Static } from 'typebox';

/**
 * One step of a question, published on progress.<request id> while it happens.
 * `data` is the step's own payload (the AskReply fields it produced). `model_insights` comes
 * after the answer (insights.mode hybrid): an InsightsFollowUp (protocol/schemas/insights.ts).
 * `clarify`: the question was ambiguous, `data` is the AskReply's `clarification` (no SQL follows).
 * `evaluated`: not a question's step but one golden question of an `eval.run` judged, `data` an
 * EvalProgress (protocol/schemas/eval.ts), on the run's own request id.
 */
export const ProgressEvent = Type.Object({
  step: Type.Enum(['started', 'context', 'intent', 'sql', 'rows', 'insights', 'model_insights', 'done', 'error', 'clarify', 'evaluated']),
  seq: Type.Integer({ minimum: 0 }),
  data: Type.Record(Type.String(), Type.Unknown()),
});
export type ProgressEvent = Static<typeof ProgressEvent>;
