/** sys.*: what every process says about itself (the operations work reads it). */
import Type, { type Static } from 'typebox';

export const SysStatsRequest = Type.Object({}, { additionalProperties: false });
export type SysStatsRequest = Static<typeof SysStatsRequest>;

export const SubjectStatsInfo = Type.Object({
  subject: Type.String(),
  kind: Type.Union([Type.Literal('request'), Type.Literal('event')]),
  handled: Type.Integer({ minimum: 0 }),
  errors: Type.Integer({ minimum: 0 }),
  totalMs: Type.Number({ minimum: 0 }),
  maxMs: Type.Number({ minimum: 0 }),
  p50Ms: Type.Number({ minimum: 0 }),
  p95Ms: Type.Number({ minimum: 0 }),
  p99Ms: Type.Number({ minimum: 0 }),
});
export type SubjectStatsInfo = Static<typeof SubjectStatsInfo>;

export const SysStatsReply = Type.Object({
  /** the bus connection's name (`cortado-<role>`…) */
  process: Type.String(),
  host: Type.String(),
  pid: Type.Integer(),
  started_at: Type.String(),
  subjects: Type.Array(SubjectStatsInfo),
});
export type SysStatsReply = Static<typeof SysStatsReply>;
