// Idempotent calls (DESIGN §3.6): re-exports only.
export {
  createIdempotency,
  type Idempotency,
  type IdempotencyCall,
  type RunOptions,
  type RunResult,
} from './idempotency.js';
export { type IdempotentOptions, idempotent } from './idempotent.js';
export { DEFAULT_MAX_RESULT_BYTES, type IdempotencyOptions } from './options.js';
export { jsonSerializer, type Serializer } from './serializer.js';
