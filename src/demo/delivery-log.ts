import { defineSignature } from '../index.js';

/**
 * The settlement signature of the seeds (DESIGN §3.1): computed from the settlement's own fields,
 * so every consumer derives the same key without a shared counter.
 */
export const settlementSignature = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

/**
 * Every unique settlement of a demo run, column by column. Struct-of-arrays keeps a million
 * settlements in about 25 MB, where a million small objects would take several times that.
 *
 * Settlement ids are dense: the instant of a round has an even id `2k`, its final `2k + 1`.
 */
export interface SettlementTable {
  /** How many unique settlements (always even: two per round). */
  readonly count: number;
  /** Player index of each settlement. */
  readonly player: Uint32Array;
  /** Room index: the room the round was played in, where the money belongs. */
  readonly room: Uint32Array;
  /** The room's own round counter (room-global: `(room, round)` identifies a round). */
  readonly round: Int32Array;
  /** Amount in minor units, never 0, positive or negative. */
  readonly net: Int32Array;
  /** 1 for the final settlement of a round, 0 for the instant one. */
  readonly final: Uint8Array;
  /** The player's simulated creation time in ms: the order key for the horizon. */
  readonly order: Float64Array;
}

/** Counts of what the generator injected, for the report. */
export interface ScenarioStats {
  /** Rounds played (two unique settlements each). */
  readonly rounds: number;
  /** Every delivery in the log: settlements (with repeats) and joins. */
  readonly deliveries: number;
  /** Settlement deliveries, repeats included. */
  readonly settlementDeliveries: number;
  /** `join` events: a player sitting down in a room (one at start, one per move). */
  readonly joins: number;
  /** Extra deliveries of one settlement, later in its block or in the next one. */
  readonly duplicates: number;
  /** Deliveries re-sent by a queue recovery (rounds r-1 and r at the end of block r). */
  readonly replayed: number;
  /** Finals delivered after the player's move to a new room. */
  readonly lateFinals: number;
  /**
   * Of those, finals sent on into the next block, after the next round's instant (`overlap: 2`
   * only). A reorder in that block may still move one before that instant: what the log delivered
   * is counted by `checkDeliveryBounds` (`finalAfterNextInstant`), which the report prints.
   */
  readonly lateAfterNextInstant: number;
  /** Swaps of a round's instant and final, or of two adjacent settlements. */
  readonly reorders: number;
}

/**
 * A generated delivery log: what an at-least-once transport handed to the consumer, in order.
 * Strategies read it; nobody writes it after generation.
 */
export interface DeliveryLog {
  readonly players: number;
  readonly rooms: number;
  readonly settlements: SettlementTable;
  /** Number of deliveries. */
  readonly length: number;
  /** Per delivery: a settlement id (`>= 0`), or a join encoded by {@link joinRef}. */
  readonly ref: Int32Array;
  /** Per delivery: the player it belongs to. */
  readonly player: Uint32Array;
  readonly stats: ScenarioStats;
}

/** Encodes "the player now sits in `room`" as a negative delivery ref. */
export function joinRef(room: number): number {
  return -room - 1;
}

/** The room of a join ref (`ref < 0`). */
export function joinRoom(ref: number): number {
  return -ref - 1;
}

/** The scope string a room is booked under. */
export function roomName(room: number): string {
  return `room-${room}`;
}

/** The ledger owner string of a player. */
export function playerName(player: number): string {
  return `player-${player}`;
}

/** The payload of settlement `id`, as a producer would send it. */
export function settlementPayload(
  table: SettlementTable,
  id: number,
): { room: string; round: number; net: number; final: boolean } {
  return {
    room: roomName(table.room[id] as number),
    round: table.round[id] as number,
    net: table.net[id] as number,
    final: table.final[id] === 1,
  };
}

/** An append-only column pair that grows by 1.5x, then is cut to length by {@link finish}. */
export class LogWriter {
  #ref: Int32Array;
  #player: Uint32Array;
  #length = 0;

  constructor(estimate: number) {
    const size = Math.max(16, Math.ceil(estimate));
    this.#ref = new Int32Array(size);
    this.#player = new Uint32Array(size);
  }

  get length(): number {
    return this.#length;
  }

  push(ref: number, player: number): void {
    if (this.#length === this.#ref.length) {
      const size = Math.ceil(this.#ref.length * 1.5);
      const ref = new Int32Array(size);
      ref.set(this.#ref);
      const pl = new Uint32Array(size);
      pl.set(this.#player);
      this.#ref = ref;
      this.#player = pl;
    }
    this.#ref[this.#length] = ref;
    this.#player[this.#length] = player;
    this.#length++;
  }

  /** The columns, trimmed to the written length (a copy, so the spare capacity is freed). */
  finish(): { ref: Int32Array; player: Uint32Array } {
    return { ref: this.#ref.slice(0, this.#length), player: this.#player.slice(0, this.#length) };
  }
}
