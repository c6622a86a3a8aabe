import fc from 'fast-check';

/** One settlement delivery in a generated log. */
export interface Delivery {
  player: string;
  room: string;
  round: number;
  final: boolean;
  net: number;
  /** Per-player creation order: instant before final, rounds increasing. */
  order: number;
  signature: string;
}

/** How one round of one player goes wrong. */
export interface RoundPlan {
  instant: number;
  final: number;
  /** The player moves to a new room after this round. */
  move: boolean;
  /** The final settlement arrives late: after the move (and, with overlap 2, after the next instant). */
  late: boolean;
  /** Instant and final delivered in swapped order. */
  swap: boolean;
  /** 0: no repeat; 1: repeat later in this round's block; 2: repeat at the end of the next block. */
  dupInstant: 0 | 1 | 2;
  dupFinal: 0 | 1 | 2;
  /** Queue recovery at the end of this block: re-deliver the settlements of this round and the one before. */
  replay: boolean;
}

const net = fc.integer({ min: -5000, max: 5000 }).filter((n) => n !== 0);
const dup = fc.constantFrom<0 | 1 | 2>(0, 0, 1, 2);
export const roundPlan: fc.Arbitrary<RoundPlan> = fc.record({
  instant: net,
  final: net,
  move: fc.boolean(),
  late: fc.boolean(),
  swap: fc.boolean(),
  dupInstant: dup,
  dupFinal: dup,
  replay: fc.boolean(),
});

/**
 * Builds one player's deliveries from round plans, keeping the delivery bound of DESIGN §3.2:
 * (b) every repeat of round r arrives before round r+2's instant, and with `overlap: 1`
 * (a) each round's final is first delivered before the next round's instant. `overlap: 2`
 * relaxes (a): a late final lands right after the next round's instant (two rounds open at once).
 */
export function playerLog(
  player: string,
  plans: RoundPlan[],
  overlap: 1 | 2,
  signature: (d: Omit<Delivery, 'signature'>) => string,
): Delivery[] {
  const blocks: Delivery[][] = plans.map(() => []);
  const settlements: [Delivery, Delivery][] = [];
  // With overlap 2, a late final is carried into the next block, right after that round's instant.
  let carried: Delivery | undefined;
  let roomIndex = 0;
  for (const [r, plan] of plans.entries()) {
    const room = `${player}-room${roomIndex}`;
    const make = (final: boolean): Delivery => {
      const base = {
        player,
        room,
        round: r,
        final,
        net: final ? plan.final : plan.instant,
        order: 2 * r + (final ? 1 : 0),
      };
      return { ...base, signature: signature(base) };
    };
    const instant = make(false);
    const final = make(true);
    settlements.push([instant, final]);
    const block = blocks[r] as Delivery[];
    const late = plan.move && plan.late;
    const carry = late && overlap === 2 && r + 1 < plans.length;
    if (carry) block.push(instant);
    else block.push(...(plan.swap && !late ? [final, instant] : [instant, final]));
    if (carried) block.splice(block.indexOf(instant) + 1, 0, carried);
    carried = carry ? final : undefined;
    if (plan.move) roomIndex++;
  }
  // Repeats, added after every first delivery is placed so they never precede it.
  for (const [r, plan] of plans.entries()) {
    const [instant, final] = settlements[r] as [Delivery, Delivery];
    for (const [d, where] of [
      [instant, plan.dupInstant],
      [final, plan.dupFinal],
    ] as const) {
      if (where === 0) continue;
      const target = where === 2 && r + 1 < plans.length ? r + 1 : r;
      (blocks[target] as Delivery[]).push(d);
    }
    if (plan.replay) {
      const previous = r > 0 ? (settlements[r - 1] as [Delivery, Delivery]) : [];
      (blocks[r] as Delivery[]).push(...previous, instant, final);
    }
  }
  return blocks.flat();
}

/** Interleaves per-player logs, keeping each player's own order, choosing by `picks`. */
export function interleave<T>(logs: T[][], picks: number[]): T[] {
  const cursors = logs.map(() => 0);
  const out: T[] = [];
  const active = logs.map((_, i) => i).filter((i) => (logs[i] as T[]).length > 0);
  let p = 0;
  while (active.length > 0) {
    const slot = (picks[p++ % Math.max(1, picks.length)] ?? 0) % active.length;
    const who = active[slot] as number;
    const log = logs[who] as T[];
    const at = cursors[who] ?? 0;
    out.push(log[at] as T);
    cursors[who] = at + 1;
    if (at + 1 === log.length) active.splice(slot, 1);
  }
  return out;
}

/**
 * The capacity a FIFO window needs for this log (DESIGN §3.2): per owner, 1 + the largest
 * number of distinct other signatures first seen between a signature's first and last delivery.
 */
/**
 * The capacity a FIFO window with a horizon needs so that no first delivery answers `stale`: when
 * a signature of order o first arrives, every signature admitted before it with an order >= o
 * must still be in the window (the horizon is the highest order evicted). That is, per player,
 * the number admitted since the earliest such one, plus the new one.
 */
export function orderCapacity(log: { player: string; signature: string; order: number }[]): number {
  const admitted = new Map<string, { signatures: Set<string>; orders: number[] }>();
  let need = 1;
  for (const d of log) {
    let seen = admitted.get(d.player);
    if (!seen) admitted.set(d.player, (seen = { signatures: new Set(), orders: [] }));
    if (seen.signatures.has(d.signature)) continue;
    const earliest = seen.orders.findIndex((o) => o >= d.order);
    if (earliest >= 0) need = Math.max(need, seen.orders.length - earliest + 1);
    seen.signatures.add(d.signature);
    seen.orders.push(d.order);
  }
  return need;
}

export function requiredCapacity(log: { player: string; signature: string }[]): number {
  const byPlayer = new Map<string, string[]>();
  for (const d of log) {
    let list = byPlayer.get(d.player);
    if (!list) byPlayer.set(d.player, (list = []));
    list.push(d.signature);
  }
  let need = 1;
  for (const sigs of byPlayer.values()) {
    const firstRank = new Map<string, number>();
    const lastRank = new Map<string, number>();
    let distinct = 0;
    for (const s of sigs) {
      if (!firstRank.has(s)) firstRank.set(s, distinct++);
      lastRank.set(s, distinct);
    }
    for (const [s, first] of firstRank) need = Math.max(need, (lastRank.get(s) as number) - first);
  }
  return need;
}
