// The embedded database's worker thread: its module, compiled or through tsx (actors/lib/load-beside.mjs).
import { loadBeside } from '../../lib/load-beside.mjs';

await loadBeside(new URL('./worker', import.meta.url));
