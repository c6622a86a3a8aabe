// PLACEHOLDER: replaced by the ordering part (see /work/wt/_brief/pg-ordering-idem.md).
import type { PgContext } from './context.js';
import type { PgOrderingOps } from './ops.js';

export function postgresOrderingOps(_ctx: PgContext): PgOrderingOps {
  const no = () => Promise.reject(new Error('not built'));
  return {
    checkpointSave: no,
    checkpointLoad: no,
    versionUpsert: no,
    versionGet: no,
    timestampAdvance: no,
    leaseRenew: no,
  };
}
