// Rate limiting (DESIGN §3.5): re-exports only.
export type {
  AllowedDecision,
  AllowingReason,
  Decision,
  DecisionReason,
  LimitDecision,
  RefusedDecision,
  RefusingReason,
} from '../windows/limits/decision.js';
export type { Algorithm } from '../windows/limits/types.js';
export {
  createLocalFirstLimiter,
  type LocalFirstLimiterOptions,
  type LocalFirstOptions,
} from './create-local-first.js';
export { rateLimitHeaders } from './headers.js';
export { createLimiter, type LimiterOptions } from './limiter.js';
export type { LocalFirstLimiter } from './local-first.js';
export type { LimitOptions } from './options.js';
export {
  createTenantRegistry,
  type TenantEvent,
  type TenantPolicy,
  type TenantRegistry,
  type TenantRegistryOptions,
} from './tenant-registry.js';
export type {
  DegradedPolicy,
  Limiter,
  LimiterKey,
  LimiterState,
  LimitStateOf,
  TakeOptions,
} from './types.js';
