/**
 * What the operations console, the alarms and the issue tracker need of their settings, checked
 * on the whole configuration: at start (config/load.ts crossChecks) and on every run-time
 * change (config/runtime.ts checkOverride runs the same checks), so a value that cannot work is
 * refused when it is saved, naming the key, never found at the next start.
 *
 * - ops_agent (while enabled): every allowed_operations entry is an operation; the provider is
 *   the warehouse ops provider.
 * - alarms (while enabled): somewhere to keep them; every default_recipients entry is an e-mail
 *   address, at most email.max_recipients_per_email of them.
 * - jira (while it and alarms are enabled): url, email, api_token and project_key set (the token
 *   may come later through the admin panel when config_db keeps it); the url https, or http to a
 *   loopback host only (the token travels in every request).
 */
import type { Config } from './schema.js';

export const OPS_OPERATIONS = ['get_expensive_queries', 'forecast_monthly_costs', 'find_public_datasets', 'check_slot_saturation'] as const;
/** ops_agent.provider values that name the one provider there is */
export const OPS_PROVIDERS: ReadonlySet<string> = new Set(['bigquery_ops', 'bigquery-ops']);

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** local@domain.tld and nothing else (no display name, no brackets). */
export function isEmailAddress(s: string): boolean {
  const at = s.lastIndexOf('@');
  if (at < 1 || s.length > 320) return false;
  const labels = s.slice(at + 1).split('.');
  return at <= 64 && LOCAL.test(s.slice(0, at)) && labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^[0-9]+$/.test(labels.at(-1) ?? '');
}

/** localhost, 127.0.0.0/8, ::1: a host whose traffic never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Why the tracker cannot be used as configured, or undefined when it can. */
export function trackerProblem(j: Config['jira']): string | undefined {
  const missing = (['url', 'email', 'api_token', 'project_key'] as const).filter((k) => j[k].trim() === '');
  if (missing.length) return `jira.enabled is true but ${missing.map((k) => `jira.${k}`).join(', ')} ${missing.length === 1 ? 'is' : 'are'} empty`;
  let u: URL;
  try {
    u = new URL(j.url);
  } catch {
    return 'jira.url is not a URL (https://your-site.atlassian.net)';
  }
  if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) {
    return `jira.url must be https (the API token goes with every request; plain http is accepted for a loopback host only): ${u.protocol}//${u.host}`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'jira.url must be an https URL';
  return undefined;
}

/** The problems of the ops_agent, alarms and jira sections, key paths first. */
export function opsConfigProblems(c: Config): string[] {
  return [...opsAgentProblems(c), ...alarmsProblems(c)];
}

export function opsAgentProblems(c: Config): string[] {
  const out: string[] = [];
  if (c.ops_agent.enabled) {
    for (const name of c.ops_agent.config.allowed_operations) {
      if (!(OPS_OPERATIONS as readonly string[]).includes(name)) out.push(`ops_agent.config.allowed_operations: ${name} is not an operation (use ${OPS_OPERATIONS.join(', ')})`);
    }
    if (!OPS_PROVIDERS.has(c.ops_agent.provider)) out.push(`ops_agent.provider must be bigquery_ops (the warehouse ops provider); ${c.ops_agent.provider} is not one`);
  }
  return out;
}

/** The alarms' and the tracker's problems (nothing while alarms are off: nothing uses them). */
export function alarmsProblems(c: Config): string[] {
  const out: string[] = [];
  if (c.alarms.enabled) {
    if (!c.alarms.storage_path.trim() && !c.config_db.enabled) out.push('alarms.storage_path is empty (and config_db is off): alarms have nowhere to be kept');
    const bad = c.alarms.default_recipients.filter((r) => !isEmailAddress(r.trim()));
    if (bad.length) out.push(`alarms.default_recipients: ${bad.slice(0, 10).map((r) => `"${r.slice(0, 80)}" is not an e-mail address`).join('; ')}`);
    const distinct = new Set(c.alarms.default_recipients.map((r) => r.trim().toLowerCase())).size;
    if (distinct > c.email.max_recipients_per_email) out.push(`alarms.default_recipients: at most ${c.email.max_recipients_per_email} recipients per e-mail (email.max_recipients_per_email); ${distinct} given`);
    if (c.jira.enabled) {
      // with config_db on, the token may be set later in the admin panel (kept encrypted there):
      // until it is, a firing alarm records "jira.api_token is empty" and still e-mails
      const later = c.config_db.enabled && c.jira.api_token.trim() === '';
      const p = trackerProblem(later ? { ...c.jira, api_token: 'set at run time' } : c.jira);
      if (p) out.push(p);
    }
  }
  return out;
}
