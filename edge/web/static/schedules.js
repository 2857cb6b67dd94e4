// The dashboard's Schedules tab (/#schedules): a signed-in user's scheduled reports — list,
// create with a cron helper (presets, the five fields, live validation and the next five runs),
// the pinned SQL shown after creation (editable), edit, pause/resume, delete, Run Now, History.
// Who: an admin or assistant session (cookie, CSRF header on writes), a plugins.auth session,
// or an API token signed in from the page's header (signin.js: this tab's sessionStorage, sent
// as a bearer token). Nobody signed in: one sentence and the header's Sign in (ui.signIn).
// The pieces: schedules/editor.js (the editor and its cron helper), schedules/panels.js (sign-in,
// list, pinned SQL, history), schedules/parts.js (what the admin panel's Scheduler tab shares).
import { createApi } from './lib/api.js';
import { el } from './lib/dom.js';
import { scheduleEditor } from './schedules/editor.js';
import { callerBox, findCaller, forgetToken, historyPanel, pinnedSqlPanel, scheduleList } from './schedules/panels.js';

export function mount(root, ui) {
  const api = createApi();
  let who = { kind: 'none' };

  const flash = el('p', { id: 'sch-flash', class: 'muted', 'aria-live': 'polite' });
  const say = (text, bad = false) => {
    flash.textContent = text;
    flash.className = bad ? 'error' : 'muted';
  };
  const guard = (fn) => async (e) => {
    e?.preventDefault?.();
    try {
      await fn(e);
    } catch (err) {
      say(err.code ? `${err.code}: ${err.message}` : err.message, true);
    }
  };

  const caller = callerBox({ ui });
  const list = scheduleList({
    onNew: guard(() => editor.open()),
    actions: {
      edit: guard((s) => editor.open(s)),
      toggle: guard(toggle),
      run: guard(runNow),
      history: guard(async (s) => history.show(s)),
      remove: guard(remove),
    },
  });
  const pinned = pinnedSqlPanel({ api, guard, say, onSaved: () => loadList() });
  const history = historyPanel({
    api, guard,
    onRunFinished: () => void loadList().catch(() => undefined),
    onRegenerated: async (s) => { await loadList(); pinned.show(s, 'written again'); },
  });
  const editor = scheduleEditor({
    api, say, guard,
    onOpen: () => { pinned.hide(); say(''); },
    onSaved: async (s, { created, sqlChanged }) => {
      await loadList();
      if (created) pinned.show(s, 'created');
      else if (sqlChanged) pinned.show(s, 'updated');
      say(created ? `"${s.name}" created.` : `"${s.name}" saved.`);
    },
  });
  root.replaceChildren(caller.node, flash, list.node, editor.node, pinned.node, history.node);

  async function loadList() {
    const r = await api.get('/api/schedules');
    list.draw(r.schedules ?? [], who, r.storage);
  }

  async function refresh() {
    who = await findCaller(api, ui);
    if (who.kind !== 'none') {
      try {
        await loadList();
      } catch (err) {
        if (err.status !== 401) throw err;
        // a stale token or session: forget it and ask again
        if (who.kind === 'token') forgetToken();
        who = { kind: 'none' };
      }
    }
    caller.draw(who);
    list.node.hidden = who.kind === 'none';
    if (who.kind === 'none') {
      editor.close();
      pinned.hide();
      history.hide();
    }
    return who;
  }

  async function toggle(s) {
    await api.post(`/api/schedules/${encodeURIComponent(s.id)}/${s.enabled ? 'pause' : 'resume'}`, {});
    await loadList();
    say(`"${s.name}" ${s.enabled ? 'paused' : 'resumed'}.`);
  }

  async function runNow(s) {
    await api.post(`/api/schedules/${encodeURIComponent(s.id)}/run`, {});
    say(`"${s.name}" queued to run now.`);
    history.show(s);
  }

  async function remove(s) {
    if (!confirm(`Delete "${s.name}"? Its run history is deleted with it.`)) return;
    await api.del(`/api/schedules/${encodeURIComponent(s.id)}`);
    if (history.of?.id === s.id) history.hide();
    if (pinned.id === s.id) pinned.hide();
    await loadList();
    say(`"${s.name}" deleted, with its history.`);
  }

  return { refresh: guard(refresh) };
}
