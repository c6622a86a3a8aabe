import { defineSignature } from '../../index.js';
import { Prng } from './prng.js';

/** What to generate. Rates are probabilities per round (per settlement for `dupRate`). */
export interface ScenarioConfig {
  /** Unique settlements to generate; rounded up to whole rounds (two settlements each). */
  readonly settlements: number;
  /** Players; the rounds are shared out evenly. */
  readonly players: number;
  readonly seed: number;
  /** A settlement is delivered again, later in its block or in the next one. */
  readonly dupRate: number;
  /** After a round the player moves and that round's final arrives after the `join`. */
  readonly lateRate: number;
  /** At the end of a block the queue re-delivers the settlements of rounds r-1 and r. */
  readonly replayRate: number;
  /** A round is re-delivered once more, minutes later (a recovery from an old checkpoint). */
  readonly lateReplayRate: number;
  /** Instant and final swapped, or two adjacent settlements swapped, within a block. */
  readonly reorderRate: number;
  /** After a round the player moves to another room (late finals always move too). */
  readonly moveRate: number;
  /**
   * 1: each round's final is first delivered before the next round's instant (bound (a) of
   * DESIGN §3.2). 2: a late final lands after the next round's instant (two rounds open at once).
   */
  readonly overlap: 1 | 2;
}

/** The defaults of `onceflow demo`: a run of a few seconds that shows every failure mode. */
export const DEFAULT_SCENARIO: Readonly<ScenarioConfig> = Object.freeze({
  settlements: 100_000,
  players: 1_000,
  seed: 1,
  dupRate: 0.05,
  lateRate: 0.03,
  replayRate: 0.02,
  lateReplayRate: 0.01,
  reorderRate: 0.05,
  moveRate: 0.1,
  overlap: 1,
});

/** The settlement signature (DESIGN §3.1): from the settlement's own fields, no shared counter. */
export const settlementSignature = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

/** One unique settlement: what a round's instant or final result books. */
export interface Settlement {
  /** Dense: a round's instant is `2k`, its final `2k + 1`. */
  readonly id: number;
  readonly player: number;
  /** Where the round was played: where the money belongs. */
  readonly room: number;
  /** The room's own round counter. */
  readonly round: number;
  /** Minor units, never 0. */
  readonly net: number;
  readonly final: boolean;
  /** The player's simulated creation time (ms): the order key for the horizon. */
  readonly createdAt: number;
  readonly signature: string;
}

/** One delivery, as an at-least-once transport hands it to the consumer. */
export interface Delivery {
  readonly player: number;
  /** The consumer's clock when it arrives (ms): what a TTL counts from. */
  readonly at: number;
  /** The settlement delivered, or absent for a `join`. */
  readonly settlement?: Settlement | undefined;
  /** A `join`: the player now sits in this room. */
  readonly join?: number | undefined;
  /** A re-delivery minutes later, outside any window's business bound. */
  readonly lateReplay?: boolean;
}

/** Counts of what the generator injected, for the report. */
export interface ScenarioStats {
  readonly rounds: number;
  readonly settlementDeliveries: number;
  readonly joins: number;
  readonly duplicates: number;
  readonly replayed: number;
  readonly lateReplayed: number;
  readonly lateFinals: number;
  readonly reorders: number;
}

/** A generated delivery log; strategies read it, nobody writes it after generation. */
export interface DemoLog {
  readonly players: number;
  readonly rooms: number;
  readonly settlements: readonly Settlement[];
  readonly deliveries: readonly Delivery[];
  readonly stats: ScenarioStats;
}

/** The scope a room is booked under, and the ledger owner of a player. */
export const roomName = (room: number): string => `room-${room}`;
export const playerName = (player: number): string => `player-${player}`;

// Players interleaved at any moment: one player's deliveries are spread out the way a busy
// consumer sees them; the window is per player, so the exact number changes no outcome.
const ACTIVE_PLAYERS = 64;
const NET_MAX = 5_000;
// Room counters start far apart, as independent rooms' counters do: a player who moves to a room
// whose counter is lower is exactly what breaks a per-player sequence guard.
const ROUND_COUNTER_START_MAX = 99_999;
// The consumer takes 100 deliveries a second; a late replay comes 5 to 15 minutes after its
// round, as a recovery from a checkpoint taken before an outage would re-deliver it. The rate is
// an assumption of the simulation: only the TTL rows depend on it (a key lives TTL seconds of
// this clock, so a TTL's peak is about TTL x rate keys); the window's keys do not.
const MS_PER_DELIVERY = 10;
/** The log's simulated consumer rate: deliveries a second on the arrival clock (`Delivery.at`). */
export const DELIVERIES_PER_SECOND = 1000 / MS_PER_DELIVERY;
const LATE_REPLAY_MS: readonly [number, number] = [5 * 60_000, 15 * 60_000];

interface Player {
  readonly id: number;
  room: number;
  roundsLeft: number;
  time: number;
  queue: Array<Settlement | number>;
  pos: number;
  carry: Settlement[];
  lateFinal: Settlement | undefined;
  previous: Settlement | undefined;
}

/** The number of rooms for `players` players: a few players per room, at least two rooms. */
export const roomCountFor = (players: number): number => Math.max(2, Math.ceil(players / 4));

/**
 * Generates the demo's delivery log: players play rounds in rooms, each round settles an instant
 * and a final amount, and an at-least-once transport delivers them with duplicates, cross-room
 * late finals, queue-recovery replays, late replays and reordering, interleaved across players.
 * A block (per player) holds the deliveries between round r's start and round r+1's instant; a
 * `join` (a negative number in a queue) moves the player. Deterministic for a given config.
 *
 * One function over ~190 lines: its helpers are closures over the generator's state (the PRNG,
 * the players, the clock, the pending late replays), which separate functions would pass around.
 *
 * Usage (internal to the CLI): `generateLog({ ...DEFAULT_SCENARIO, settlements: 1000 }).stats.rounds // 500`
 */
export function generateLog(config: ScenarioConfig): DemoLog {
  const rng = new Prng(config.seed);
  const rounds = Math.ceil(config.settlements / 2);
  const rooms = roomCountFor(config.players);
  const counters = Array.from({ length: rooms }, () => rng.int(0, ROUND_COUNTER_START_MAX));
  const settlements: Settlement[] = [];
  const deliveries: Delivery[] = [];
  const stats = {
    rounds,
    settlementDeliveries: 0,
    joins: 0,
    duplicates: 0,
    replayed: 0,
    lateReplayed: 0,
    lateFinals: 0,
    reorders: 0,
  };
  const late: { due: number; settlement: Settlement }[] = [];
  let clock = 0;
  // One object per delivery, of one shape: a million of them are most of the log's memory.
  const deliver = (player: number, settlement?: Settlement, join?: number, lateReplay = false): void => {
    deliveries.push({ player, at: clock, settlement, join, lateReplay });
    clock += MS_PER_DELIVERY;
    if (settlement) stats.settlementDeliveries++;
  };
  const insertRandom = <T>(items: T[], lo: number, x: T): void => {
    items.splice(rng.int(lo, items.length), 0, x);
  };

  const startRound = (p: Player): Settlement => {
    const round = ++counters[p.room]!;
    const finalAt = p.time + rng.int(500, 5_000);
    for (const [final, createdAt] of [
      [false, p.time],
      [true, finalAt],
    ] as const) {
      const net = rng.int(1, NET_MAX) * (rng.chance(0.5) ? 1 : -1);
      const signature = settlementSignature({ room: roomName(p.room), round, net, final });
      settlements.push({
        id: settlements.length,
        player: p.id,
        room: p.room,
        round,
        net,
        final,
        createdAt,
        signature,
      });
    }
    p.time = finalAt + rng.int(100, 3_000);
    p.roundsLeft--;
    return settlements[settlements.length - 2] as Settlement;
  };

  // The next block of player p: settlements and joins (negative: -room - 1), empty when done.
  const buildBlock = (p: Player): Array<Settlement | number> => {
    const items: Array<Settlement | number> = [];
    const instant = p.roundsLeft > 0 ? startRound(p) : undefined;
    const final = instant && (settlements[instant.id + 1] as Settlement);
    if (instant) items.push(instant);
    // Nothing goes before a round's instant except by an explicit reorder below.
    const lo = items.length;
    const lateFinal = p.lateFinal;
    if (lateFinal) insertRandom(items, lo, lateFinal);
    for (const c of p.carry) insertRandom(items, lo, c);
    let isLate = false;
    if (instant && final) {
      isLate = rng.chance(config.lateRate);
      const move = isLate || rng.chance(config.moveRate);
      if (!isLate) insertRandom(items, lo, final);
      if (rng.chance(config.reorderRate)) reorder(items, instant, final, isLate, lo);
      if (move) {
        let room = rng.int(0, rooms - 2);
        if (room >= p.room) room++;
        items.push(-room - 1);
        stats.joins++;
        p.room = room;
      }
      if (isLate) {
        stats.lateFinals++;
        // overlap 1: after the join, still before the next instant. overlap 2: in the next block.
        if (config.overlap === 1) items.push(final);
      }
    }
    // Repeats: round r's settlements may repeat in block r+1 (before round r+2 begins: bound (b)).
    const carry: Settlement[] = [];
    const firstHere: [Settlement, boolean][] = [];
    if (lateFinal) firstHere.push([lateFinal, false]);
    if (instant) firstHere.push([instant, true]);
    if (final && !(isLate && config.overlap === 2)) firstHere.push([final, true]);
    for (const [s, mayCarry] of firstHere) {
      if (!rng.chance(config.dupRate)) continue;
      stats.duplicates++;
      if (mayCarry && rng.chance(0.5)) carry.push(s);
      else insertRandom(items, items.indexOf(s) + 1, s);
    }
    if (instant && final && rng.chance(config.replayRate)) {
      const prev = p.previous;
      const replay = prev ? [prev, settlements[prev.id + 1] as Settlement, instant] : [instant];
      if (!(isLate && config.overlap === 2)) replay.push(final);
      items.push(...replay);
      stats.replayed += replay.length;
    }
    if (instant && final && rng.chance(config.lateReplayRate)) {
      const due = clock + rng.int(LATE_REPLAY_MS[0], LATE_REPLAY_MS[1]);
      // Kept sorted by due time (a binary search, then an insert into at most a few thousand).
      let lo = 0;
      let hi = late.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((late[mid] as { due: number }).due <= due) lo = mid + 1;
        else hi = mid;
      }
      late.splice(lo, 0, { due, settlement: instant }, { due, settlement: final });
      stats.lateReplayed += 2;
    }
    p.lateFinal = isLate && config.overlap === 2 ? final : undefined;
    p.carry = carry;
    if (instant) p.previous = instant;
    return items;
  };

  // Swaps a round's instant and final, or two adjacent items after the block's first slot. A late
  // final's round with nothing else in its block has nothing to reorder.
  const reorder = (
    items: Array<Settlement | number>,
    instant: Settlement,
    final: Settlement,
    isLate: boolean,
    lo: number,
  ): void => {
    const adjacent = items.length - lo >= 2;
    if (!isLate && (!adjacent || rng.chance(0.5))) {
      const i = items.indexOf(instant);
      const f = items.indexOf(final);
      items[i] = final;
      items[f] = instant;
      stats.reorders++;
    } else if (adjacent) {
      const j = rng.int(lo, items.length - 2);
      [items[j], items[j + 1]] = [items[j + 1] as Settlement | number, items[j] as Settlement | number];
      stats.reorders++;
    }
  };

  const flushLate = (until: number): void => {
    while (late.length > 0 && (late[0] as { due: number }).due <= until) {
      const { due, settlement } = late.shift() as { due: number; settlement: Settlement };
      clock = Math.max(clock, due);
      deliver(settlement.player, settlement, undefined, true);
    }
  };

  const base = Math.floor(rounds / config.players);
  const extra = rounds % config.players;
  let nextPlayer = 0;
  const active: Player[] = [];
  const activate = (): void => {
    while (active.length < ACTIVE_PLAYERS && nextPlayer < config.players) {
      const id = nextPlayer++;
      const n = base + (id < extra ? 1 : 0);
      if (n === 0) continue;
      const room = rng.int(0, rooms - 1);
      stats.joins++;
      active.push({
        id,
        room,
        roundsLeft: n,
        time: rng.int(0, 1_000_000),
        queue: [-room - 1],
        pos: 0,
        carry: [],
        lateFinal: undefined,
        previous: undefined,
      });
    }
  };
  activate();
  while (active.length > 0) {
    const slot = rng.int(0, active.length - 1);
    const p = active[slot] as Player;
    if (p.pos === p.queue.length) {
      p.queue = buildBlock(p);
      p.pos = 0;
      if (p.queue.length === 0) {
        active[slot] = active[active.length - 1] as Player;
        active.pop();
        activate();
        continue;
      }
    }
    if (late.length > 0) flushLate(clock);
    const item = p.queue[p.pos++] as Settlement | number;
    if (typeof item === 'number') deliver(p.id, undefined, -item - 1);
    else deliver(p.id, item);
  }
  flushLate(Number.POSITIVE_INFINITY);
  return { players: config.players, rooms, settlements, deliveries, stats: { ...stats } };
}
