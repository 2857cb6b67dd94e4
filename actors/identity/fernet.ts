/** Fernet now lives in actors/lib/fernet.ts (the executor opens sealed scopes with it too); kept for existing imports. */
export * from '../lib/fernet.js';
