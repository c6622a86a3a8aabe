import type { DeliveryLog } from './delivery-log.js';
import { Decision, type Decisions } from './strategy.js';

/** One row of the report: a strategy's decisions compared with the truth. */
export interface StrategyRow {
  readonly id: string;
  readonly strategy: string;
  /** Settlement deliveries seen (repeats included, joins excluded). */
  readonly delivered: number;
  /** Deliveries the strategy applied. */
  readonly applied: number;
  /** Deliveries refused as duplicates (or as "past"). */
  readonly blocked: number;
  /** Deliveries answered `stale`: not applied, referred to reconciliation. */
  readonly stale: number;
  /** Unique settlements applied 0 times, and the sum of their |net|. */
  readonly lostCount: number;
  readonly moneyLost: number;
  /** Of the lost settlements, those that were answered `stale` (reconciliation has them). */
  readonly staleOnlyLost: number;
  /** Extra applications (times applied − 1, summed), and the sum of |net| x extra. */
  readonly doubledCount: number;
  readonly moneyDoubled: number;
  /** Applications booked under a room that is not the settlement's own, and their |net|. */
  readonly misbookedCount: number;
  readonly moneyMisbooked: number;
  /** Rooms whose total in the strategy's own books differs from the truth. */
  readonly roomsOff: number;
  /** Sum over rooms of |booked − truth|: what reconciliation would have to explain. */
  readonly roomGap: number;
  /** Time spent in the strategy alone. */
  readonly ms: number;
  /** Settlement deliveries per second, from `ms`. */
  readonly perSecond: number;
}

/**
 * The truth: every unique settlement applied exactly once, under its own room.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const truth = truthRoomTotals(log); // truth[room] = sum of that room's settlements
 */
export function truthRoomTotals(log: DeliveryLog): Float64Array {
  const totals = new Float64Array(log.rooms);
  const { count, room, net } = log.settlements;
  for (let id = 0; id < count; id++) {
    const r = room[id] as number;
    totals[r] = (totals[r] as number) + (net[id] as number);
  }
  return totals;
}

/**
 * Compares a strategy's decisions and books with the truth. Pure; O(log length + settlements).
 * Money is counted in minor units as numbers: |net| <= 5 000, so even 10^9 applications stay far
 * below 2^53.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const row = measure(log, decisions, await strategy.roomTotals(), truthRoomTotals(log), {
 *       id: strategy.id, strategy: strategy.name, ms,
 *     });
 */
export function measure(
  log: DeliveryLog,
  decisions: Decisions,
  books: Float64Array,
  truth: Float64Array,
  meta: { id: string; strategy: string; ms: number },
): StrategyRow {
  const { count, room, net } = log.settlements;
  // At most a handful of deliveries per settlement in any generated log; saturate, never wrap.
  const times = new Uint8Array(count);
  const staleSeen = new Uint8Array(count);
  let delivered = 0;
  let applied = 0;
  let blocked = 0;
  let stale = 0;
  let misbookedCount = 0;
  let moneyMisbooked = 0;
  for (let i = 0; i < log.length; i++) {
    const id = log.ref[i] as number;
    if (id < 0) continue;
    delivered++;
    const outcome = decisions.outcome[i];
    if (outcome === Decision.APPLIED) {
      applied++;
      if ((times[id] as number) < 255) times[id] = (times[id] as number) + 1;
      if (decisions.room[i] !== room[id]) {
        misbookedCount++;
        moneyMisbooked += Math.abs(net[id] as number);
      }
    } else if (outcome === Decision.BLOCKED) blocked++;
    else if (outcome === Decision.STALE) {
      stale++;
      staleSeen[id] = 1;
    }
  }
  let lostCount = 0;
  let moneyLost = 0;
  let staleOnlyLost = 0;
  let doubledCount = 0;
  let moneyDoubled = 0;
  for (let id = 0; id < count; id++) {
    const t = times[id] as number;
    const amount = Math.abs(net[id] as number);
    if (t === 0) {
      lostCount++;
      moneyLost += amount;
      if (staleSeen[id] === 1) staleOnlyLost++;
    } else if (t > 1) {
      doubledCount += t - 1;
      moneyDoubled += amount * (t - 1);
    }
  }
  let roomsOff = 0;
  let roomGap = 0;
  for (let r = 0; r < log.rooms; r++) {
    const gap = Math.abs((books[r] ?? 0) - (truth[r] as number));
    if (gap !== 0) roomsOff++;
    roomGap += gap;
  }
  const seconds = meta.ms / 1000;
  return {
    id: meta.id,
    strategy: meta.strategy,
    delivered,
    applied,
    blocked,
    stale,
    lostCount,
    moneyLost,
    staleOnlyLost,
    doubledCount,
    moneyDoubled,
    misbookedCount,
    moneyMisbooked,
    roomsOff,
    roomGap,
    ms: Math.round(meta.ms),
    perSecond: seconds > 0 ? Math.round(delivered / seconds) : 0,
  };
}

/** True when a row shows exactly-once: nothing lost, doubled or misbooked, every room exact. */
export function isExact(row: StrategyRow): boolean {
  return row.lostCount === 0 && row.doubledCount === 0 && row.misbookedCount === 0 && row.roomsOff === 0;
}
