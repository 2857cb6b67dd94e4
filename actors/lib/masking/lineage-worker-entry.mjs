// The lineage parser's worker thread (isolated.ts): its module, compiled or through tsx (actors/lib/load-beside.mjs).
import { loadBeside } from '../load-beside.mjs';

await loadBeside(new URL('./lineage-worker', import.meta.url));
