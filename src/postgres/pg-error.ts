import { isOnceflowError, StoreError, type StoreOutcome } from '../core/errors.js';

// SQLSTATEs after which the statement was rolled back and the same statement may succeed when
// sent again: a serialization failure and a deadlock (PostgreSQL picked this transaction as the
// victim), both retried inside the operation when it runs on its own; too many connections and
// a server starting or shutting down before the statement began; a statement timeout or cancel
// (the statement is rolled back whole).
const RETRY_IN_OPERATION = new Set(['40001', '40P01']);
const PASSING = new Set(['53300', '57P03', '57014', '55P03', '53000', '53100', '53200']);

// The connection went away (class 08, or the server terminating the backend: 57P01 admin
// shutdown, 57P02 crash shutdown, 57P05 idle session timeout). Whether the statement committed
// before it went is unknown: its COMMIT may have landed and its reply been lost.
const CONNECTION_LOST = new Set(['57P01', '57P02', '57P05']);

/**
 * A `pg` error's SQLSTATE, when it has one (errors from the server do; socket errors do not). A
 * node:net error's code can look like one (`EPIPE`, `EPERM`: five capitals), so an error that
 * names a system call is never taken for the server's.
 */
export function sqlState(err: unknown): string | undefined {
  const e = err as { code?: unknown; syscall?: unknown } | null;
  const code = e?.code;
  if (e?.syscall !== undefined) return undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether the operation may send its statement again at once (see RETRY_IN_OPERATION). */
export function retriableInOperation(err: unknown): boolean {
  const state = sqlState(err);
  return state !== undefined && RETRY_IN_OPERATION.has(state);
}

/** Whether the connection the statement ran on is gone (it must be destroyed, not reused). */
export function connectionLost(err: unknown): boolean {
  if (isOnceflowError(err)) return false;
  const state = sqlState(err);
  if (state !== undefined) return state.startsWith('08') || CONNECTION_LOST.has(state);
  // node-postgres and node:net errors: no SQLSTATE, the socket closed, reset or timed out.
  return err instanceof Error;
}

/** What a statement kind is: `read` changes nothing; `write` is one statement (one transaction). */
export type PgCallKind = 'read' | 'write';

/**
 * What a failed statement says about its effect. `sent: false`: it failed before it was written
 * (no connection could be had), so it did not run.
 */
export function pgFailure(
  err: unknown,
  kind: PgCallKind,
  sent: boolean,
): { outcome: StoreOutcome; retriable: boolean } {
  const state = sqlState(err);
  if (!sent) return { outcome: 'not-applied', retriable: true };
  if (state !== undefined && (RETRY_IN_OPERATION.has(state) || PASSING.has(state))) {
    return { outcome: 'not-applied', retriable: true };
  }
  if (connectionLost(err)) return { outcome: kind === 'read' ? 'not-applied' : 'unknown', retriable: true };
  // The server answered with an error and rolled the statement back: it did not take effect,
  // and the same statement would fail the same way.
  return { outcome: 'not-applied', retriable: false };
}

/** A StoreError for a failed statement, with what {@link pgFailure} says about it. */
export function pgStoreError(operation: string, err: unknown, kind: PgCallKind, sent: boolean): StoreError {
  return new StoreError(operation, err, pgFailure(err, kind, sent));
}
