/** The secret box now lives in actors/lib/secrets.ts (the executor opens sealed scopes with it too); kept for existing imports. */
export * from '../lib/secrets.js';
