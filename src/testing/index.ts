// onceflow/testing: the store conformance kit, runner-agnostic, and wrapStore for fault injection.
// Re-exports only.
import { cases } from './cases.js';
import { run, runCase } from './conformance.js';

export type { ConformanceCase, ConformanceStep } from './cases.js';
export type { CaseResult, RunOptions } from './conformance.js';
export { wrapStore } from './wrap-store.js';

/**
 * The conformance kit every store must pass: `cases` as plain data, `run(store)` for all of
 * them, `runCase(store, case)` for one. Results list differences; nothing throws on a mismatch.
 *
 * @example
 * ```ts
 * import { conformance } from 'onceflow/testing';
 * // In a test runner, one test per case: `for (const c of conformance.cases) test(c.name, ...)`.
 * const store = memoryStore();
 * const [first] = conformance.cases;
 * (await conformance.runCase(store, first)).failures; // []
 * ```
 */
export const conformance = { cases, run, runCase } as const;
