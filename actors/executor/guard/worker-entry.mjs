// The guard's worker thread (isolated.ts): its module, compiled or through tsx (actors/lib/load-beside.mjs).
import { loadBeside } from '../../lib/load-beside.mjs';

await loadBeside(new URL('./worker', import.meta.url));
