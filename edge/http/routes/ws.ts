/**
 * GET /api/ws without an upgrade: the WebSocket endpoint (edge/ws/endpoint.ts) takes only
 * WebSocket upgrades; a plain GET is told so (400) instead of a bare 404.
 */
import { CortadoError } from '../../../protocol/errors.js';
import { WS_PATH } from '../../ws/endpoint.js';
import type { Router } from '../router.js';

export function wsRoutes(router: Router): void {
  router.get(WS_PATH, { auth: 'none', summary: 'WebSocket upgrade: ask and confirm frames answered with the events an SSE stream sends (a plain GET is 400)' }, () => {
    throw new CortadoError('VALIDATION_FAILED', `${WS_PATH} takes WebSocket upgrades only (Connection: Upgrade, Upgrade: websocket)`);
  });
}
