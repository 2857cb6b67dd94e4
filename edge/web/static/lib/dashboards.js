// A signed-in person's dashboards as the answer view and the Dashboards tab both use them: the
// dashboard last opened or pinned to (this browser remembers it), and "Pin to dashboard" in one
// click (the answer's SQL as a tile, on that dashboard, or on a new "My dashboard" when there is
// none). The dashboards themselves are the server's (/api/dashboards, docs/http-api.md).

const LAST = 'cortado.dashboard.last';
export const FIRST_DASHBOARD = 'My dashboard';

/** The dashboard last opened or pinned to in this browser (an id), if any. */
export function lastDashboard() {
  try { return localStorage.getItem(LAST) ?? undefined; } catch { return undefined; }
}

export function rememberDashboard(id) {
  try { localStorage.setItem(LAST, id); } catch { /* private mode: not remembered */ }
}

/** The tile input the API takes back (what it added, such as next_refresh_at, left out). */
export const tileInput = (t) => ({
  id: t.id, title: t.title, ...(t.question ? { question: t.question } : {}), ...(t.sql ? { sql: t.sql } : {}), refresh: t.refresh,
  ...(t.timezone ? { timezone: t.timezone } : {}), ...(t.size === 'wide' ? { size: 'wide' } : {}),
});

/**
 * The answer view's `pin` option for a signed-in person: choices() → {dashboards: [{id, name}],
 * last} (the list read once, then kept); pin({dashboard?, title, sql}) → the dashboard pinned to.
 */
export function createPinner(api) {
  let listed;
  const list = () => (listed ??= api.get('/api/dashboards').then((r) => r.dashboards.map(({ id, name }) => ({ id, name })), (e) => { listed = undefined; throw e; }));
  const preferred = (ds) => ds.find((d) => d.id === lastDashboard())?.id ?? ds[0]?.id;
  return {
    async choices() {
      const dashboards = await list();
      return { dashboards, last: preferred(dashboards) };
    },
    async pin({ dashboard, title, sql }) {
      const id = dashboard ?? preferred(await list());
      // read again just before the write: a tile added in another tab is kept
      let d = id ? await api.get(`/api/dashboards/${encodeURIComponent(id)}`).catch((e) => { if (e.status === 404) return undefined; throw e; }) : undefined;
      if (!d) {
        d = await api.post('/api/dashboards', { name: FIRST_DASHBOARD, tiles: [] });
        listed = undefined;
      }
      const saved = await api.put(`/api/dashboards/${encodeURIComponent(d.id)}`, { name: d.name, tiles: [...d.tiles.map(tileInput), { title, sql, refresh: 'on_open' }] });
      rememberDashboard(saved.id);
      return saved;
    },
  };
}
