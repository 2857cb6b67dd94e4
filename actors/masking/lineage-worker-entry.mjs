// The lineage parser's worker thread (isolated.ts): load TypeScript through tsx (as bin/cortado.js does), then the worker.
import { register } from 'tsx/esm/api';

register();
await import('./lineage-worker.ts');
