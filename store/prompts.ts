/**
 * Prompt texts set at run time (owner: the settings actor), by prompt name
 * (config/prompts.ts PROMPT_KEYS). Kept as the overrides `prompts.<name>` (see section.ts).
 */
import type { OverridesRepository } from './overrides.js';
import { OverrideSection, type SectionRepository } from './section.js';

export const PROMPTS_SECTION = 'prompts';

export type PromptsRepository = SectionRepository<string>;

export function promptsIn(overrides: OverridesRepository): PromptsRepository {
  return new OverrideSection(overrides, PROMPTS_SECTION, (v): v is string => typeof v === 'string', 'a prompt is text');
}
