// The guard's worker thread (isolated.ts): its module, compiled or through tsx (actors/lib/workers/load-beside.mjs).
import { loadBeside } from '../../lib/workers/load-beside.mjs';

await loadBeside(new URL('./worker', import.meta.url));
