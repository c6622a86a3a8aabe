// The buffer layer of seed 002, driven through a ledger with and without a Bloom pre-check: before
// the (expensive, pure) work of a delivery, `ledger.seen` asks "seen before?"; seen → dropped as a
// duplicate; not seen → the work, then `ledger.apply`, the authoritative atomic step. The property
// tests compare the two paths delivery by delivery.
import type { Ledger } from '../../src/ledger/ledger.js';
import type { SeenFilter } from '../../src/windows/seen-filter.js';

/** One event of the stream: `id` indexes the event list, `owner` whose window holds it. */
export interface ReplayEvent {
  readonly owner: string;
  readonly signature: string;
  readonly amount: number;
}

/** What one delivery came to: dropped by `seen`, or the work ran and apply answered. */
export type DeliveryFate = 'dropped' | 'applied' | 'duplicate' | 'stale';

export interface ReplayResult {
  /** Per delivery, in delivery order. */
  readonly fates: DeliveryFate[];
  /** How many deliveries the work ran for. */
  readonly worked: number;
}

/**
 * Delivers `deliveries` (indexes into `events`) in batches of `concurrency` running at once (a
 * batch's deliveries race each other, as partitions of a queue would). `junk` ids are added to
 * `flood` before each batch, keeping its false-positive rate high while the stream runs.
 */
export async function replay(
  ledger: Ledger,
  events: readonly ReplayEvent[],
  deliveries: readonly number[],
  concurrency: number,
  flood?: { filter: SeenFilter; junkPerBatch: number; prefix: string },
): Promise<ReplayResult> {
  const fates: DeliveryFate[] = new Array(deliveries.length);
  let worked = 0;
  let junk = 0;
  const deliver = async (at: number): Promise<void> => {
    const e = events[deliveries[at] as number] as ReplayEvent;
    const entry = { owner: e.owner, signature: e.signature, deltas: { coins: e.amount } };
    if (await ledger.seen(entry)) {
      fates[at] = 'dropped';
      return;
    }
    worked++;
    fates[at] = (await ledger.apply(entry)).outcome;
  };
  for (let i = 0; i < deliveries.length; i += concurrency) {
    if (flood !== undefined)
      for (let j = 0; j < flood.junkPerBatch; j++) flood.filter.add(`${flood.prefix}:${junk++}`);
    const batch: Promise<void>[] = [];
    for (let at = i; at < Math.min(i + concurrency, deliveries.length); at++) batch.push(deliver(at));
    await Promise.all(batch);
  }
  return { fates, worked };
}

/** The measured false-positive rate of `filter` over `probes` ids never added. */
export function measuredFalsePositiveRate(filter: SeenFilter, probes: number, prefix: string): number {
  let hits = 0;
  for (let i = 0; i < probes; i++) if (filter.mightContain(`${prefix}:${i}`)) hits++;
  return hits / probes;
}

/**
 * The exactly-once facts of one replay: each event applied by exactly one delivery, and that
 * delivery in the first batch that carried the event (nothing dropped, nothing delayed); every
 * other delivery of it dropped or answered `duplicate`.
 */
export function checkExactlyOnce(
  events: readonly ReplayEvent[],
  deliveries: readonly number[],
  concurrency: number,
  result: ReplayResult,
): string | undefined {
  const applied = new Map<number, number>();
  const firstBatch = new Map<number, number>();
  deliveries.forEach((id, at) => {
    if (!firstBatch.has(id)) firstBatch.set(id, Math.floor(at / concurrency));
    const fate = result.fates[at];
    if (fate === 'applied') {
      if (applied.has(id)) return;
      applied.set(id, at);
    } else if (fate === 'stale') {
      applied.set(id, Number.NaN);
    }
  });
  for (const [id, batch] of firstBatch) {
    const at = applied.get(id);
    if (at === undefined) return `event ${id} (${events[id]?.signature}) was never applied`;
    if (Number.isNaN(at)) return `event ${id} answered stale`;
    if (Math.floor(at / concurrency) !== batch)
      return `event ${id} applied in a later batch than its first delivery`;
  }
  const count = result.fates.filter((f) => f === 'applied').length;
  if (count !== firstBatch.size) return `${count} applies for ${firstBatch.size} events`;
  return undefined;
}
