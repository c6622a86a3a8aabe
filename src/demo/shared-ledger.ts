import type { Ledger } from '../index.js';

/** The stores a demo run can share between worker processes. */
export type SharedBackend = 'redis' | 'postgres';

/** The demo's settlement ledger on a shared store, with what the run needs around it. */
export interface SharedLedgerHandle {
  readonly ledger: Ledger;
  /** Closes the connection(s). */
  close(): Promise<void>;
  /** Removes what the run wrote (its own key prefix or schema, never anything else). */
  cleanup(): Promise<number>;
}

/**
 * Opens the demo's settlement ledger on `backend` at `url`, in the run's own `namespace` (a key
 * prefix on Redis, a schema on PostgreSQL). Each backend's client package is an optional peer
 * dependency, loaded only when its flag is used.
 */
export async function openSharedLedger(
  backend: SharedBackend,
  url: string,
  namespace: string,
): Promise<SharedLedgerHandle> {
  if (backend === 'redis') return (await import('./redis-ledger.js')).openRedisLedger(url, namespace);
  return (await import('./postgres-ledger.js')).openPostgresLedger(url, namespace);
}

/**
 * A namespace of the run's own, from its time and pid: the Redis key prefix
 * `onceflow-demo:<time>:<pid>:` (what docs/operations.md tells users to SCAN for after a killed
 * run) or the schema `onceflow_demo_<time>_<pid>`.
 */
export function runNamespace(backend: SharedBackend): string {
  const time = Date.now().toString(36);
  return backend === 'redis'
    ? `onceflow-demo:${time}:${process.pid}:`
    : `onceflow_demo_${time}_${process.pid}`;
}
