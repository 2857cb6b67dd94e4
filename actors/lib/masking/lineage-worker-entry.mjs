// The lineage parser's worker thread (isolated.ts): its module, compiled or through tsx (actors/lib/workers/load-beside.mjs).
import { loadBeside } from '../workers/load-beside.mjs';

await loadBeside(new URL('./lineage-worker', import.meta.url));
