/**
 * `onceflow/testing`: what a store author, or an application testing its failure handling, needs:
 * the store conformance kit (every case a store must pass, as plain data, with one
 * runner-agnostic runner), `wrapStore` to change one operation of a store, and the fault helpers
 * (a TCP proxy that cuts, partitions or delays connections; Redis, Redis Cluster and PostgreSQL
 * servers of a test's own to kill and restart). Re-exports only, and the `conformance` object.
 *
 * @module
 */
import { cases, retentionCases } from './cases.js';
import { idempotencyCases, idempotencyGetCases } from './idempotency-cases.js';
import { limiterAdjustCases } from './limiter-adjust-cases.js';
import { limiterCases } from './limiter-cases.js';
import { orderingCases } from './ordering-cases.js';
import { run, runCase, suites } from './suites.js';

export { freePort, type PortRange, testPortRange } from './ports.js';
export { postgresAnswers, type StartedPostgres, startPostgres } from './postgres-servers.js';
export {
  type ClusterNode,
  type ClusterOptions,
  pingable,
  type StartedCluster,
  type StartedRedis,
  startCluster,
  startRedis,
} from './redis-servers.js';
export type { AnyCase, CaseResult, OutageHook, RunOptions, Suite, SuiteName } from './suites.js';
export { startTcpProxy, type TcpProxy, type TcpProxyOptions } from './tcp-proxy.js';
export { wrapStore } from './wrap-store.js';

/**
 * The conformance kit every store must pass, over every operation of the Store contract:
 * `suites` (each with the store operations it calls and its cases, as plain data), `run(store)`
 * for all of them (or `{ suites: [...] }`), `runCase(store, case)` for one. Results list
 * differences; nothing throws on a mismatch. A suite whose optional operations the store lacks is
 * reported as `unsupported`, not failed, unless `require` names it. `cases` are the ledger's,
 * `retentionCases` the ledger's on a store with a small journal retention (`options.retention`),
 * `limiterCases`, `limiterAdjustCases`, `orderingCases`, `idempotencyCases` and `idempotencyGetCases`
 * the others'.
 *
 * @example
 * ```ts
 * import { conformance } from 'onceflow/testing';
 * // In a test runner, one test per case:
 * // for (const s of conformance.suites) for (const c of s.cases) test(`${s.name}: ${c.name}`, ...)
 * const store = memoryStore();
 * const [first] = conformance.cases;
 * (await conformance.runCase(store, first)).failures; // []
 * conformance.suites.map((s) => s.name); // ['ledger', 'ledger-retention', 'limiter', 'limiter-state', 'limiter-outage', 'limiter-adjust', 'version-gate', 'checkpoint', 'snowflake-clock', 'idempotency', 'idempotency-get']
 * ```
 */
export const conformance = {
  suites,
  cases,
  retentionCases,
  limiterCases,
  limiterAdjustCases,
  orderingCases,
  idempotencyCases,
  idempotencyGetCases,
  run,
  runCase,
} as const;
