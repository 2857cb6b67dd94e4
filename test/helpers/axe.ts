/**
 * axe-core in a test's browser page: the serious and critical violations of the page as it is now,
 * one line each (impact, rule, what it asks, up to three elements).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation { id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }

export async function axeSerious(page: Page): Promise<string[]> {
  // evaluated over the DevTools protocol: the page's strict CSP (no inline script) stays as served
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE);
  const found = await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`) as Violation[];
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`);
}
