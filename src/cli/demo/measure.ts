import type { DemoLog } from './log.js';

/** A strategy's answer to one delivery: `undefined` for a `join` (nothing to decide). */
export type Outcome = 'applied' | 'blocked' | 'stale' | undefined;

/** What a strategy did with a log, per delivery, and what it holds after the run. */
export interface Run {
  readonly outcome: readonly Outcome[];
  /** The room each applied delivery was booked under (ignored for the others). */
  readonly room: readonly number[];
  /** Per-room totals from the strategy's own books; derived from the bookings when absent. */
  readonly totals?: readonly number[];
  /** The dedup state it holds after the run (or at its peak, for a TTL), when it holds any. */
  readonly held?: Held;
}

/** Dedup state held: keys, and bytes as a Redis key of that name would take (see `heldBytes`). */
export interface Held {
  readonly keys: number;
  readonly bytes: number;
}

/** One way of consuming the log: a row of the report. */
export interface Strategy {
  /** Stable key for `--json`. */
  readonly id: string;
  /** The row label; short, so the table fits 100 columns. */
  readonly name: string;
  /** `progress`, when given, hears how many settlement deliveries are done (a long row on a network store). */
  run(log: DemoLog, progress?: (done: number) => void): Run | Promise<Run>;
}

// MEMORY USAGE of a key set by `SET key 1 NX EX 60` on Redis 7.0, 43 bytes of name: 104 bytes,
// so 61 besides the name (dict entry, object header, the expiry's entry). The same cost is charged
// to every row's keys, onceflow's window entries included, so the rows compare like with like.
const BYTES_PER_KEY = 61;

/** The bytes of `keys` (their names) held as keys: the name plus {@link BYTES_PER_KEY}. */
export function heldBytes(nameBytes: number, keys: number): number {
  return nameBytes + keys * BYTES_PER_KEY;
}

/** One row of the report: a strategy's decisions compared with the truth. */
export interface StrategyRow {
  readonly id: string;
  readonly strategy: string;
  /** Settlement deliveries seen (repeats included, joins excluded). */
  readonly delivered: number;
  readonly applied: number;
  /** Refused as duplicates (or as "past", by the sequence guard). */
  readonly blocked: number;
  /** Answered `stale`: not applied, referred to reconciliation. */
  readonly stale: number;
  /** Unique settlements applied 0 times, and the sum of their |net|. */
  readonly lostCount: number;
  readonly moneyLost: number;
  /** Of the lost settlements, those only ever answered `stale` (reconciliation has them). */
  readonly staleOnlyLost: number;
  /** Extra applications (times applied − 1, summed), and |net| x extra. */
  readonly doubledCount: number;
  readonly moneyDoubled: number;
  /** Applications booked under a room that is not the settlement's own, and their |net|. */
  readonly misbookedCount: number;
  readonly moneyMisbooked: number;
  /** Rooms whose total in the strategy's own books differs from the truth. */
  readonly roomsOff: number;
  /** Dedup keys held and their bytes (0 for a strategy that keeps per-player counters only). */
  readonly heldKeys: number;
  readonly heldBytes: number;
  readonly ms: number;
  /** Settlement deliveries per second through this strategy alone. */
  readonly perSecond: number;
}

/**
 * Compares a strategy's run with the truth (every settlement applied once, under its own room).
 * Pure; O(deliveries + settlements + rooms).
 *
 * Usage (internal to the CLI): `measure(log, run, { id: 'x', strategy: 'x', ms: 12 }).moneyDoubled`
 */
export function measure(
  log: DemoLog,
  run: Run,
  meta: { id: string; strategy: string; ms: number },
): StrategyRow {
  const times = new Array<number>(log.settlements.length).fill(0);
  const staleSeen = new Set<number>();
  const books = new Array<number>(log.rooms).fill(0);
  let delivered = 0;
  let applied = 0;
  let blocked = 0;
  let stale = 0;
  let misbookedCount = 0;
  let moneyMisbooked = 0;
  log.deliveries.forEach((d, i) => {
    const s = d.settlement;
    if (s === undefined) return;
    delivered++;
    const outcome = run.outcome[i];
    if (outcome === 'applied') {
      applied++;
      times[s.id] = (times[s.id] as number) + 1;
      const room = run.room[i] as number;
      books[room] = (books[room] as number) + s.net;
      if (room !== s.room) {
        misbookedCount++;
        moneyMisbooked += Math.abs(s.net);
      }
    } else if (outcome === 'blocked') blocked++;
    else if (outcome === 'stale') {
      stale++;
      staleSeen.add(s.id);
    }
  });
  let lostCount = 0;
  let moneyLost = 0;
  let staleOnlyLost = 0;
  let doubledCount = 0;
  let moneyDoubled = 0;
  const truth = new Array<number>(log.rooms).fill(0);
  for (const s of log.settlements) {
    truth[s.room] = (truth[s.room] as number) + s.net;
    const t = times[s.id] as number;
    if (t === 0) {
      lostCount++;
      moneyLost += Math.abs(s.net);
      if (staleSeen.has(s.id)) staleOnlyLost++;
    } else if (t > 1) {
      doubledCount += t - 1;
      moneyDoubled += Math.abs(s.net) * (t - 1);
    }
  }
  const own = run.totals ?? books;
  const roomsOff = truth.filter((total, r) => (own[r] ?? 0) !== total).length;
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
    heldKeys: run.held?.keys ?? 0,
    heldBytes: run.held?.bytes ?? 0,
    ms: Math.round(meta.ms),
    perSecond: meta.ms > 0 ? Math.round(delivered / (meta.ms / 1000)) : 0,
  };
}

/** True when a row shows exactly-once: nothing lost, doubled or misbooked, every room exact. */
export function isExact(row: StrategyRow): boolean {
  return row.lostCount === 0 && row.doubledCount === 0 && row.misbookedCount === 0 && row.roomsOff === 0;
}
