/** What a tool is, and what it gets to work with. */
import type { Static, TSchema } from 'typebox';
import type { Bus, Ctx } from '../../../runtime/bus.js';
import type { Logger } from '../../../runtime/log.js';
import type { Config } from '../../../config/schema.js';
import type { McpSessionInfo } from '../session.js';

export interface ToolContext {
  bus: Bus;
  config: Config;
  log: Logger;
  session: McpSessionInfo;
  /** request id and user of this call */
  ctx: Ctx;
}

/** A tool's answer: structured JSON for programs, a compact text rendering for the model. */
export interface ToolOutput {
  structured: Record<string, unknown>;
  text: string;
}

export interface McpTool<S extends TSchema = TSchema> {
  name: string;
  /** one or two short sentences: every word is paid for in every client's context */
  description: string;
  /** the arguments, as JSON Schema (TypeBox) */
  input: S;
  /** whether this connection advertises the tool (default: always) */
  enabled?(session: McpSessionInfo, config: Config): boolean;
  /** throw a CortadoError on failure: it becomes an `isError` result (or InvalidParams) */
  run(args: Static<S>, tc: ToolContext): Promise<ToolOutput>;
}
