/** The cron math now lives in actors/lib/cron.ts (the alarms actor reads crons too); kept for existing imports. */
export * from '../lib/cron.js';
