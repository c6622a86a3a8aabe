// How many entries a consumer runs and holds at once, in all and per key, and how many a read
// waits for: the bounds that keep its memory fixed whatever the stream holds.
import type { ResolvedOptions } from './consumer-options.js';

// Script calls of the ledger path in flight at once: one being run by Redis while the next batch
// is prepared (its entries decoded, their ledger entries made), so neither side waits for the
// other (the next one's runs that hold an owner of the one run wait for it: ledger-path.ts sends an
// owner's calls one after the other); a third would only queue behind them on the one connection.
const LEDGER_BATCHES_IN_FLIGHT = 2;

/**
 * Entries running at once: `concurrency` handlers, or on the ledger path (the booking is the
 * script's: no handler runs) two batches of `batch` entries being booked.
 */
export function runningBound<E>(o: ResolvedOptions<E>, ledger: boolean): number {
  return ledger ? LEDGER_BATCHES_IN_FLIGHT * o.batch : o.concurrency;
}

/** How many entries a consumer holds at most, per key at most, and reads at least at a time. */
export function holdLimits<E>(
  o: ResolvedOptions<E>,
  ledger: boolean,
): { maxHeld: number; keyCap: number; readAtLeast: number } {
  // Room for one full read on top of what runs: the next batch is at hand when a key frees up.
  // With the defaults: 16 + 64 = 80 entries (handlers), 2 x 64 + 64 = 192 (ledger path).
  const running = runningBound(o, ledger);
  const maxHeld = running + o.batch;
  // At most max(batch, running) entries held per key, `running` being what runs at once
  // (runningBound: 16 handlers, or two batches on the ledger path), always less than maxHeld =
  // running + batch (both are at least 1): a key whose head failed waits for it (claimIdle, up to
  // maxDeliveries times), and its newer entries never take every place; the rest stay for other
  // keys and for reclaims. Not `batch` alone: with a small batch, a key holding `batch` entries
  // would be spilled while `concurrency` allows far more keys at once; on the ledger path a key's
  // next run is held while its run is booked. With the defaults: 64 (handlers), 128 (ledger path).
  // Without `key` every entry is its own key: no cap.
  const keyCap = o.key === undefined ? Number.POSITIVE_INFINITY : Math.max(o.batch, running);
  // A read waits for a quarter of a key's cap (at most one batch, at least one entry) to be free
  // again, and never for more than one key at its cap leaves (maxHeld - keyCap = min(batch,
  // running)): a key that stays near its cap is read in quarters, not one round trip per entry.
  const readAtLeast = Math.max(
    1,
    Math.min(
      o.batch,
      Math.floor(Math.min(keyCap, maxHeld) / 4),
      keyCap === Infinity ? o.batch : maxHeld - keyCap,
    ),
  );
  return { maxHeld, keyCap, readAtLeast };
}
