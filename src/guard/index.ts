export { createLookupGuard, type LookupGuard } from './lookup-guard.js';
export type { LookupGuardOptions } from './options.js';
export type { LookupGuardState, LookupGuardStats } from './types.js';
