// PLACEHOLDER: replaced by the limiter part (see /work/wt/_brief/pg-limiter.md).
import type { PgContext } from './context.js';
import type { PgCleanup, PgLimiterOps } from './ops.js';

export function postgresLimiterOps(_ctx: PgContext): PgLimiterOps {
  const no = () => Promise.reject(new Error('not built'));
  return { limiterTake: no, limiterReset: no, limiterDelete: no };
}

export function limiterCleanup(_ctx: PgContext): PgCleanup {
  return async () => 0;
}
