import {
  type DeliveryLog,
  joinRef,
  LogWriter,
  type ScenarioStats,
  type SettlementTable,
} from './delivery-log.js';
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

/** The defaults of `onceflow demo`: a run well under 30 s that shows every failure mode. */
export const DEFAULT_SCENARIO: Readonly<ScenarioConfig> = Object.freeze({
  settlements: 100_000,
  players: 1_000,
  seed: 1,
  dupRate: 0.05,
  lateRate: 0.03,
  replayRate: 0.02,
  reorderRate: 0.05,
  moveRate: 0.1,
  overlap: 1,
});

// Players interleaved at any moment. Enough that one player's deliveries are spread out the way
// a busy consumer sees them; the window is per player, so the exact number changes no outcome.
const ACTIVE_PLAYERS = 64;
const NET_MAX = 5_000;
// Room counters start far apart, as independent rooms' counters do: a player who moves to a
// room whose counter is lower is exactly what breaks a per-player sequence guard.
const ROUND_COUNTER_START_MAX = 99_999;

/** The number of rooms for `players` players: a few players per room, at least two rooms. */
export function roomCountFor(players: number): number {
  return Math.max(2, Math.ceil(players / 4));
}

interface Player {
  readonly id: number;
  room: number;
  roundsLeft: number;
  /** Simulated time (ms) at which the next round starts. */
  time: number;
  /** The current block, delivered from `pos` on. */
  queue: number[];
  pos: number;
  /** Repeats of the previous block's settlements, delivered in the next block. */
  carry: number[];
  /** `overlap: 2`: the previous round's final, first delivered in the next block. */
  lateFinal: number;
  /** Instant id of the previous round, or -1. */
  previous: number;
}

/**
 * Generates the demo's delivery log: players play rounds in rooms, each round settles an
 * instant and a final amount, and an at-least-once transport delivers them with duplicates,
 * cross-room late finals, queue-recovery replays and reordering, interleaved across players.
 *
 * Per player, block r holds the deliveries between round r's start and round r+1's instant.
 * With `overlap: 1` the log keeps DESIGN §3.2's bound: (a) each round's final is first delivered
 * before the next round's instant, (b) every repeat of a round arrives before the round after
 * next begins. `overlap: 2` relaxes (a) for late finals. Deterministic for a given config.
 *
 * O(settlements) time; memory is the log's columns plus a few small arrays per active player.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const log = generateLog({ ...DEFAULT_SCENARIO, settlements: 1000, seed: 7 });
 *     log.stats.rounds; // 500
 */
export function generateLog(
  config: ScenarioConfig,
  onProgress?: (roundsDone: number, rounds: number) => void,
): DeliveryLog {
  const rng = new Prng(config.seed);
  const rounds = Math.ceil(config.settlements / 2);
  const rooms = roomCountFor(config.players);
  const counters = new Int32Array(rooms);
  for (let r = 0; r < rooms; r++) counters[r] = rng.int(0, ROUND_COUNTER_START_MAX);

  const count = rounds * 2;
  const table: SettlementTable = {
    count,
    player: new Uint32Array(count),
    room: new Uint32Array(count),
    round: new Int32Array(count),
    net: new Int32Array(count),
    final: new Uint8Array(count),
    order: new Float64Array(count),
  };
  const stats = {
    rounds,
    deliveries: 0,
    settlementDeliveries: 0,
    joins: 0,
    duplicates: 0,
    replayed: 0,
    lateFinals: 0,
    lateAfterNextInstant: 0,
    reorders: 0,
  };
  const expected = count * (1 + config.dupRate + 2 * config.replayRate) + config.players * 2;
  const writer = new LogWriter(expected * 1.05);
  let nextId = 0;

  const insertRandom = (items: number[], lo: number, x: number): void => {
    items.splice(rng.int(lo, items.length), 0, x);
  };

  const startRound = (p: Player): number => {
    const id = nextId;
    nextId += 2;
    const round = ++counters[p.room]!;
    const finalAt = p.time + rng.int(500, 5_000);
    for (const [k, order] of [
      [0, p.time],
      [1, finalAt],
    ] as const) {
      table.player[id + k] = p.id;
      table.room[id + k] = p.room;
      table.round[id + k] = round;
      table.net[id + k] = rng.int(1, NET_MAX) * (rng.chance(0.5) ? 1 : -1);
      table.final[id + k] = k;
      table.order[id + k] = order;
    }
    p.time = finalAt + rng.int(100, 3_000);
    p.roundsLeft--;
    if (onProgress !== undefined && (id / 2) % 4096 === 0) onProgress(id / 2, rounds);
    return id;
  };

  // The next block of player p, or an empty array when p has nothing left to deliver.
  const buildBlock = (p: Player): number[] => {
    const items: number[] = [];
    const instant = p.roundsLeft > 0 ? startRound(p) : -1;
    const final = instant + 1;
    if (instant >= 0) items.push(instant);
    // Nothing goes before a round's instant except by an explicit reorder below.
    const lo = items.length;
    const lateFinal = p.lateFinal;
    if (lateFinal >= 0) insertRandom(items, lo, lateFinal);
    for (const c of p.carry) insertRandom(items, lo, c);

    let late = false;
    if (instant >= 0) {
      late = rng.chance(config.lateRate);
      const move = late || rng.chance(config.moveRate);
      if (!late) insertRandom(items, lo, final);
      if (rng.chance(config.reorderRate)) reorder(items, instant, final, late, lo);
      if (move) {
        let room = rng.int(0, rooms - 2);
        if (room >= p.room) room++;
        items.push(joinRef(room));
        stats.joins++;
        p.room = room;
      }
      if (late) {
        stats.lateFinals++;
        // overlap 1: after the join, still before the next instant. overlap 2: in the next block,
        // after the next round's instant (or in a tail block after the player's last round).
        if (config.overlap === 1) items.push(final);
        else if (p.roundsLeft > 0) stats.lateAfterNextInstant++;
      }
    }

    // Repeats. Round r's settlements may repeat in block r+1 (before round r+2 begins: bound (b));
    // a late final first delivered in this block belongs to the previous round, so only here.
    const carry: number[] = [];
    const firstHere: [id: number, mayCarry: boolean][] = [];
    if (lateFinal >= 0) firstHere.push([lateFinal, false]);
    if (instant >= 0) firstHere.push([instant, true]);
    if (instant >= 0 && !(late && config.overlap === 2)) firstHere.push([final, true]);
    for (const [id, mayCarry] of firstHere) {
      if (!rng.chance(config.dupRate)) continue;
      stats.duplicates++;
      if (mayCarry && rng.chance(0.5)) carry.push(id);
      else insertRandom(items, items.indexOf(id) + 1, id);
    }
    if (instant >= 0 && rng.chance(config.replayRate)) {
      const replay = p.previous >= 0 ? [p.previous, p.previous + 1, instant] : [instant];
      if (!(late && config.overlap === 2)) replay.push(final);
      items.push(...replay);
      stats.replayed += replay.length;
    }

    p.lateFinal = late && config.overlap === 2 ? final : -1;
    p.carry = carry;
    if (instant >= 0) p.previous = instant;
    return items;
  };

  // Swaps a round's instant and final, or two adjacent settlements after the block's first slot:
  // whichever the block allows (both: a coin decides), so the rate given is the rate applied to
  // every round but a late final's with nothing else in its block, which has nothing to reorder
  // (its final comes after the join, and swapping it there would undo the lateness).
  const reorder = (items: number[], instant: number, final: number, late: boolean, lo: number): void => {
    const pair = !late;
    const adjacent = items.length - lo >= 2;
    if (pair && (!adjacent || rng.chance(0.5))) {
      const i = items.indexOf(instant);
      const f = items.indexOf(final);
      items[i] = final;
      items[f] = instant;
      stats.reorders++;
    } else if (adjacent) {
      const j = rng.int(lo, items.length - 2);
      const a = items[j] as number;
      items[j] = items[j + 1] as number;
      items[j + 1] = a;
      stats.reorders++;
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
        queue: [joinRef(room)],
        pos: 0,
        carry: [],
        lateFinal: -1,
        previous: -1,
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
    const ref = p.queue[p.pos++] as number;
    writer.push(ref, p.id);
    if (ref >= 0) stats.settlementDeliveries++;
  }
  onProgress?.(rounds, rounds);

  const { ref, player } = writer.finish();
  stats.deliveries = ref.length;
  const frozen: ScenarioStats = { ...stats };
  return {
    players: config.players,
    rooms,
    settlements: table,
    length: ref.length,
    ref,
    player,
    stats: frozen,
  };
}
