// The embeddable widgets' entry (bundled into /widget.js by edge/http/routes/widget.ts):
//
//   <script src="https://cortado.example/widget.js" data-cortado-widget="assistant" defer></script>
//
// Each tag mounts one widget; two tags (assistant and agent) give two launchers. The widget
// talks to the Cortado its script came from. Options, from an optional `window.CortadoConfig`
// object set before the tag (or `{assistant: {...}, agent: {...}}` per widget), overridden by
// the tag's data attributes:
//   data-cortado-widget     assistant (default) | agent
//   data-cortado-title      the panel's title
//   data-cortado-position   right (default) | left
//   data-cortado-open       "true": open at load
//   data-cortado-transport  sse (default) | ws
//   data-cortado-examples   example questions, separated by "|"
//   data-cortado-base       another Cortado URL than the script's own
//   data-theme              auto (default: the visitor's prefers-color-scheme) | light | dark
//                           (data-cortado-theme is the same)
// `window.Cortado.mount(options)` mounts one more from code.

import { createShell } from './shell.js';
import { startAssistant } from './assistant.js';
import { startAgent } from './agent.js';

const TITLES = { assistant: 'Ask the data', agent: 'Data agent' };

/** The Cortado a script came from: its origin and the path before /widget.js (a Cortado behind a path prefix). */
export function baseOf(src) {
  try {
    const u = new URL(src, location.href);
    return `${u.origin}${u.pathname.replace(/\/[^/]*$/, '')}`;
  } catch {
    return '';
  }
}

function fromTag(script) {
  const d = script?.dataset ?? {};
  const out = {};
  if (d.cortadoWidget) out.widget = d.cortadoWidget;
  if (d.cortadoTitle) out.title = d.cortadoTitle;
  if (d.cortadoPosition) out.position = d.cortadoPosition;
  if (d.cortadoOpen) out.open = d.cortadoOpen === 'true';
  if (d.cortadoTransport) out.transport = d.cortadoTransport;
  if (d.cortadoExamples) out.examples = d.cortadoExamples.split('|').map((s) => s.trim()).filter(Boolean);
  if (d.cortadoBase) out.base = d.cortadoBase.replace(/\/+$/, '');
  const theme = d.cortadoTheme ?? d.theme;
  if (theme) out.theme = theme;
  return out;
}

const registry = (window.__cortadoWidgets ??= { count: 0 });

export function mount(options = {}) {
  const kind = options.widget === 'agent' ? 'agent' : 'assistant';
  const cfg = {
    base: options.base ?? '',
    title: options.title || TITLES[kind],
    position: options.position === 'left' ? 'left' : 'right',
    open: Boolean(options.open),
    transport: options.transport === 'ws' ? 'ws' : undefined,
    examples: Array.isArray(options.examples) ? options.examples.map(String).slice(0, 10) : [],
    theme: options.theme === 'light' || options.theme === 'dark' ? options.theme : 'auto',
  };
  const shell = createShell({ kind, title: cfg.title, position: cfg.position, theme: cfg.theme, stack: registry.count++ > 0 });
  const start = kind === 'agent' ? startAgent : startAssistant;
  return start(shell, cfg).catch((err) => {
    shell.say(`The widget could not start: ${err?.message ?? err}`, 'error');
  });
}

function boot() {
  const script = document.currentScript;
  const global = window.CortadoConfig && typeof window.CortadoConfig === 'object' ? window.CortadoConfig : {};
  const tag = fromTag(script);
  const kind = tag.widget ?? global.widget ?? 'assistant';
  const perKind = global[kind] && typeof global[kind] === 'object' ? global[kind] : {};
  const options = { ...global, ...perKind, ...tag, widget: kind };
  options.base ??= baseOf(script?.src ?? '');
  const go = () => mount(options);
  if (document.body) go();
  else document.addEventListener('DOMContentLoaded', go, { once: true });
}

window.Cortado ??= { mount: (o = {}) => mount({ base: '', ...o }) };
boot();
