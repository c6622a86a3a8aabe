// PLACEHOLDER: replaced by the ledger part (see /work/wt/_brief/pg-ledger.md).
import { InvalidOptionError } from '../core/errors.js';
import type { PgContext } from './context.js';
import type { PgCleanup, PgLedgerOps } from './ops.js';

/** The ledger's options of createPostgresStore. */
export interface PgLedgerOptions {
  /** Journal retention (to be specified by the ledger part). */
  journal?: { maxEntriesPerOwner?: number };
}

export interface CheckedLedgerOptions {
  readonly maxEntriesPerOwner: number;
}

export function checkLedgerOptions(options: PgLedgerOptions): CheckedLedgerOptions {
  if (options.journal !== undefined) throw new InvalidOptionError('journal', 'absent', options.journal);
  return { maxEntriesPerOwner: Number.POSITIVE_INFINITY };
}

export function postgresLedgerOps(_ctx: PgContext, _options: CheckedLedgerOptions): PgLedgerOps {
  const no = () => Promise.reject(new Error('not built'));
  return {
    ledgerApply: no,
    ledgerResolve: no,
    ledgerBalances: no,
    ledgerWindow: no,
    ledgerJournal: no,
    ledgerScopeTotals: no,
  };
}

export function ledgerCleanup(_ctx: PgContext, _options: CheckedLedgerOptions): PgCleanup {
  return async () => 0;
}
