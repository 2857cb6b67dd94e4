/**
 * The workspace actor: each signed-in person's question history (with favourites) and
 * dashboards, over the bus (handle.ts). It opens its own storage like the semantic actor:
 * config_db → PostgreSQL, shared by every copy; otherwise this process's memory (lost on
 * restart; the replies say `stored: "memory"`).
 */
import {
  Actor, DashboardDelete, DashboardGet, DashboardList, DashboardSave, HistoryAdd, HistoryDelete, HistoryFavourite, HistoryList,
} from '../../protocol/subjects.js';
import { openStorage } from '../../store/index.js';
import type { ActorDeps, RunningActor } from '../runtime/actor.js';
import * as h from './handle.js';

export async function start(deps: ActorDeps): Promise<RunningActor> {
  const { bus, config, log } = deps;
  const store = await openStorage(config, log);
  try {
    const d: h.WorkspaceDeps = { bus, config, log, store };
    bus.serve(HistoryAdd, (input) => h.historyAdd(input, d));
    bus.serve(HistoryList, (input) => h.historyList(input, d));
    bus.serve(HistoryFavourite, (input) => h.historyFavourite(input, d));
    bus.serve(HistoryDelete, (input) => h.historyDelete(input, d));
    bus.serve(DashboardList, (input, ctx) => h.dashboardList(input, d, ctx));
    bus.serve(DashboardGet, (input, ctx) => h.dashboardGet(input, d, ctx));
    bus.serve(DashboardSave, (input, ctx) => h.dashboardSave(input, d, ctx));
    bus.serve(DashboardDelete, (input) => h.dashboardDelete(input, d));
    log.info({ store: store.kind }, 'workspace ready');
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return { name: Actor.Workspace, stop: () => store.close() };
}
