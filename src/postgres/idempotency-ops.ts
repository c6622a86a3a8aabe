// PLACEHOLDER: replaced by the idempotency part (see /work/wt/_brief/pg-ordering-idem.md).
import type { PgContext } from './context.js';
import type { PgCleanup, PgIdempotencyOps } from './ops.js';

export function postgresIdempotencyOps(_ctx: PgContext): PgIdempotencyOps {
  const no = () => Promise.reject(new Error('not built'));
  return {
    idempotencyBegin: no,
    idempotencyRenew: no,
    idempotencyComplete: no,
    idempotencyRelease: no,
  };
}

export function idempotencyCleanup(_ctx: PgContext): PgCleanup {
  return async () => 0;
}
