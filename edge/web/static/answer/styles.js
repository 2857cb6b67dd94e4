// The answer view's stylesheet (the one copy): injected as a <style> into a ShadowRoot the panel is
// mounted in, or once into the document's <head>. Only --ctd-* custom properties (with fallbacks),
// so it looks right inside a foreign page, and follows the page's light/dark theme when it sets them.
// `:host` rules are !important: inside a shadow root they win over the host page's !important rules.
export const ANSWER_CSS = `
:host { all: initial !important; display: block !important; visibility: visible !important; opacity: 1 !important;
  font-family: var(--ctd-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif) !important; color: var(--ctd-ink, #2b2118) !important;
  font-size: 15px !important; line-height: 1.4 !important; text-align: left !important; }
.ctd-ask, .ctd-ask * { box-sizing: border-box; }
.ctd-ask { color: var(--ctd-ink, #2b2118); font-family: var(--ctd-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif); font-size: 15px; line-height: 1.4; text-align: left; }
/* a page's own CSS (style.css and dashboard.css on \`/\`) reaches a panel mounted outside a shadow
   root: what it sets on bare elements and common class names is set back here, so the panel
   looks the same on \`/\` as in a shadow root (test/e2e/answer-view-more.test.ts compares them) */
.ctd-ask .steps li::before, .ctd-ask .steps li.done::before { content: none; }
.ctd-ask button .ctd-icon + span { margin-left: 0; }
.ctd-ask textarea, .ctd-ask textarea:focus { box-shadow: none; }
.ctd-ask .grid, .ctd-ask .feedback, .ctd-ask .insights li { margin: 0; }
.ctd-ask .meta { margin: 8px 0 0; }
.ctd-ask details.timing summary { cursor: pointer; width: max-content; }
.ctd-ask details.timing span { display: block; margin-top: 4px; overflow-wrap: anywhere; }
.ctd-ask .feedback { font-size: 13px; }
.ctd-ask .message { white-space: normal; line-height: 1.5; }
.ctd-ask .error { border: 0; }
.ctd-ask th { font-weight: 600; }
.ctd-ask .chart figcaption { font-weight: normal; }
.ctd-ask [hidden] { display: none !important; }
.ctd-ask .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.ctd-ask button { font: inherit; font-size: 14px; border-radius: 8px; border: 1px solid var(--ctd-accent, #8a5a2e); background: var(--ctd-accent, #8a5a2e); color: var(--ctd-on-accent, #fff); padding: 6px 14px; cursor: pointer; display: inline-flex; align-items: center; gap: 6px; }
.ctd-ask button:disabled { opacity: .55; cursor: default; }
.ctd-ask button:focus-visible, .ctd-ask select:focus-visible, .ctd-ask textarea:focus-visible, .ctd-ask a:focus-visible, .ctd-ask [tabindex]:focus-visible { outline: 3px solid var(--ctd-focus, #1a73e8); outline-offset: 2px; }
.ctd-ask button.ghost { background: transparent; color: var(--ctd-accent-ink, #6b4423); }
.ctd-ask button.small { padding: 2px 8px; font-size: 12px; }
.ctd-ask button.chip { background: var(--ctd-chip, #f4ece3); color: var(--ctd-chip-ink, #5b3d24); border-color: transparent; border-radius: 99px; padding: 4px 12px; font-size: 13px; }
.ctd-ask .ask-form { background: var(--ctd-card, #fff); border: 1px solid var(--ctd-line, #eadfd3); border-radius: 12px; padding: 12px; }
.ctd-ask textarea { display: block; width: 100%; resize: vertical; font: inherit; font-size: 16px; color: inherit; background: var(--ctd-input, #fff); border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 8px; padding: 10px 12px; }
.ctd-ask .row { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 8px 0 0; }
.ctd-ask .spacer { flex: 1; }
.ctd-ask .examples { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 8px; }
.ctd-ask .muted { color: var(--ctd-muted, #6f6054); font-size: 13px; }
.ctd-ask .answer { background: var(--ctd-card, #fff); border: 1px solid var(--ctd-line, #eadfd3); border-radius: 12px; padding: 14px; margin-top: 14px; overflow-wrap: anywhere; }
.ctd-ask .answer .q { font-weight: 600; margin-bottom: 8px; }
.ctd-ask .steps { list-style: none; display: flex; flex-wrap: wrap; gap: 6px; padding: 0; margin: 0 0 10px; }
.ctd-ask .steps li { font-size: 12px; color: var(--ctd-muted, #6f6054); background: var(--ctd-soft, #f6f1ea); border-radius: 99px; padding: 2px 10px; display: inline-flex; gap: 4px; align-items: center; }
.ctd-ask .steps li .ctd-icon { color: var(--ctd-ok, #2e7d32); width: 12px; height: 12px; }
.ctd-ask .explanation { margin: 6px 0 10px; }
.ctd-ask .message p { margin: 0 0 8px; line-height: 1.5; }
.ctd-ask .message pre, .ctd-ask .message code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; background: var(--ctd-soft, #f6f1ea); border-radius: 4px; padding: 1px 4px; }
.ctd-ask .message pre { padding: 8px; overflow: auto; }
.ctd-ask .message a { color: var(--ctd-link, #0b57d0); }
.ctd-ask .sql-block { position: relative; }
.ctd-ask pre.sql { margin: 0; background: var(--ctd-code-bg, #1f1a16); color: var(--ctd-code-ink, #f3e9dd); border-radius: 8px; padding: 12px 14px; padding-right: 80px; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; overflow: auto; }
.ctd-ask pre.sql .tok-kw { color: var(--ctd-code-kw, #f2b66d); font-weight: 600; }
.ctd-ask pre.sql .tok-str { color: var(--ctd-code-str, #a5d6a7); }
.ctd-ask pre.sql .tok-num { color: var(--ctd-code-num, #90caf9); }
.ctd-ask pre.sql .tok-com { color: var(--ctd-code-com, #b0a79c); font-style: italic; }
.ctd-ask pre.sql .tok-id { color: var(--ctd-code-id, #f8bbd0); }
.ctd-ask .sql-block .copy { position: absolute; top: 6px; right: 6px; padding: 2px 8px; font-size: 12px; background: #3a2f27; border-color: #3a2f27; color: #fff; }
.ctd-ask .table-wrap { margin-top: 12px; }
.ctd-ask .grid { overflow: auto; max-height: var(--ctd-table-max-height, 480px); border: 1px solid var(--ctd-line, #eadfd3); border-radius: 8px; }
.ctd-ask table { border-collapse: collapse; width: 100%; font-size: 13px; }
.ctd-ask th, .ctd-ask td { padding: 6px 10px; border-bottom: 1px solid var(--ctd-line, #eadfd3); text-align: left; white-space: nowrap; }
.ctd-ask th { position: sticky; top: 0; background: var(--ctd-soft, #f6f1ea); padding: 0; }
.ctd-ask th button.sort { background: transparent; border: 0; color: inherit; font-weight: 600; font-size: 13px; width: 100%; padding: 6px 10px; border-radius: 0; justify-content: space-between; }
.ctd-ask th[aria-sort="ascending"] .ctd-icon, .ctd-ask th[aria-sort="descending"] .ctd-icon { color: var(--ctd-accent, #8a5a2e); }
.ctd-ask th .ctd-icon { opacity: .6; width: 12px; height: 12px; }
.ctd-ask td.num, .ctd-ask th.num { text-align: right; font-variant-numeric: tabular-nums; }
.ctd-ask td.null { color: var(--ctd-muted, #6f6054); font-style: italic; }
.ctd-ask .pager { display: flex; gap: 8px; align-items: center; justify-content: flex-end; margin-top: 6px; font-size: 12px; }
.ctd-ask .chart { margin: 12px 0 0; }
.ctd-ask .chart-bar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; }
.ctd-ask .chart-box { position: relative; height: 260px; width: 100%; }
.ctd-ask .chart-caption { font-size: 13px; margin-bottom: 4px; }
.ctd-ask .chart-bar .pick { display: inline-flex; gap: 4px; align-items: center; font-size: 13px; }
.ctd-ask .chart-pick summary { cursor: pointer; font-size: 13px; color: var(--ctd-accent, #8a5a2e); }
.ctd-ask .chart-pick[open] summary { margin-bottom: 6px; }
.ctd-ask .kpis { display: flex; flex-wrap: wrap; gap: 10px; }
.ctd-ask .kpi { display: grid; gap: 2px; padding: 12px 16px; min-width: 140px; border-radius: 10px; background: var(--ctd-soft, #f6f1ea); border-left: 4px solid var(--ctd-accent, #8a5a2e); }
.ctd-ask .kpi-value { font-size: 28px; font-weight: 700; line-height: 1.1; font-variant-numeric: tabular-nums; }
.ctd-ask .kpi-label { font-size: 14px; font-weight: 600; }
.ctd-ask .kpi-caption { font-size: 12px; }
.ctd-ask select { font: inherit; font-size: 13px; padding: 3px 6px; border-radius: 6px; border: 1px solid var(--ctd-line, #d9c9b8); background: var(--ctd-input, #fff); color: inherit; }
.ctd-ask .insights { list-style: none; padding: 0; margin: 12px 0 0; display: grid; gap: 6px; }
.ctd-ask .insights li { display: flex; gap: 8px; align-items: flex-start; padding: 8px 10px; border-radius: 8px; font-size: 14px; background: var(--ctd-soft, #f6f1ea); border-left: 4px solid var(--ctd-info, #4e79a7); }
.ctd-ask .insights li.success { border-left-color: var(--ctd-ok, #2e7d32); }
.ctd-ask .insights li.warning { border-left-color: var(--ctd-warn, #b26a00); }
.ctd-ask .insights li.critical { border-left-color: var(--ctd-err, #b3261e); }
.ctd-ask .insights li .ctd-icon { flex: none; margin-top: 2px; }
.ctd-ask .error { color: var(--ctd-err, #b3261e); background: var(--ctd-err-bg, #fdecea); border-radius: 8px; padding: 10px 12px; }
.ctd-ask .error code { font-weight: 700; }
.ctd-ask .error p { margin: 0 0 6px; }
.ctd-ask .error .error-title { font-weight: 600; }
.ctd-ask .error-details summary, .ctd-ask .retry-sql summary { cursor: pointer; font-size: 13px; }
.ctd-ask .error-details pre, .ctd-ask .retry-sql pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; margin: 6px 0 0; }
.ctd-ask .retry-sql { margin: 0 0 6px; color: var(--ctd-muted, #6f6054); }
.ctd-ask .error-text { color: var(--ctd-err, #b3261e); font-size: 13px; }
.ctd-ask .actions { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-top: 10px; }
.ctd-ask .feedback { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.ctd-ask .feedback input { font: inherit; font-size: 13px; padding: 4px 8px; border: 1px solid var(--ctd-line, #d9c9b8); border-radius: 6px; min-width: 0; flex: 1 1 160px; background: var(--ctd-input, #fff); color: inherit; }
.ctd-ask button[aria-pressed="true"] { background: var(--ctd-accent, #8a5a2e); color: var(--ctd-on-accent, #fff); }
.ctd-ask button.fav[aria-pressed="true"] .ctd-icon { fill: currentColor; }
.ctd-ask .downloads { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.ctd-ask .confirm { border: 2px solid var(--ctd-accent, #8a5a2e); border-radius: 10px; padding: 12px; margin-top: 10px; background: var(--ctd-card, #fff); }
.ctd-ask .confirm h3 { margin: 0 0 8px; font-size: 15px; }
.ctd-ask .choices { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 8px; }
.ctd-ask .pin-wrap { display: inline-flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.ctd-ask button.pin[aria-pressed="true"] .ctd-icon { fill: currentColor; }
/* a dashboard tile (layout 'tile'): the chart or the number first, the rows and the SQL behind toggles */
.ctd-ask .tile-note { margin: 0 0 6px; }
.ctd-ask .tile-sql, .ctd-ask .tile-rows { margin-top: 8px; }
.ctd-ask .tile-sql summary, .ctd-ask .tile-rows summary { cursor: pointer; font-size: 13px; color: var(--ctd-accent-ink, #6b4423); width: max-content; }
.ctd-ask .tile-sql[open] summary, .ctd-ask .tile-rows[open] summary { margin-bottom: 6px; }
.ctd-ask.tile-view .chart { margin: 0; }
.ctd-ask.tile-view .chart-bar { display: none; }
.ctd-ask.tile-view .chart-box { height: 220px; }
.ctd-ask.tile-view .kpi-value { font-size: 34px; }
@media (max-width: 480px) { .ctd-ask .answer { padding: 10px; } .ctd-ask pre.sql { padding-right: 14px; padding-top: 34px; } .ctd-ask .chart-box { height: 200px; } }
`;
