import type { DeliveryLog } from './delivery-log.js';

/** A strategy's decision on one delivery. */
export const Decision = {
  /** Not a settlement (a `join`), nothing to decide. */
  NONE: 0,
  /** Applied: the amount was booked under `Decisions.room`. */
  APPLIED: 1,
  /** Refused as a duplicate (or, for naive guards, as "past"). */
  BLOCKED: 2,
  /** Not applied; referred to reconciliation (onceflow's horizon). */
  STALE: 3,
} as const;

/** One of {@link Decision}'s values. */
export type Decision = (typeof Decision)[keyof typeof Decision];

/** Per-delivery decisions of one strategy over one log (reused from one strategy to the next). */
export interface Decisions {
  readonly outcome: Uint8Array;
  /** The room index the amount was booked under, for `APPLIED`. */
  readonly room: Int32Array;
}

/** Allocates decision columns for a log of `length` deliveries. */
export function createDecisions(length: number): Decisions {
  return { outcome: new Uint8Array(length), room: new Int32Array(length) };
}

/**
 * A way of consuming the demo's delivery log. The runner feeds it the log in chunks (to keep
 * the progress bar alive) and times only `run`.
 */
export interface Strategy {
  /** Stable key for JSON output. */
  readonly id: string;
  /** The row label of the report. */
  readonly name: string;
  /** Decides deliveries `[from, to)`, writing one decision per delivery into `out`. */
  run(from: number, to: number, out: Decisions): void | Promise<void>;
  /**
   * For strategies that cannot run in chunks (worker processes): decides the whole log at once,
   * reporting how many deliveries are done. When present, the runner calls it instead of `run`
   * and skips the warm-up.
   */
  runAll?(out: Decisions, onProgress: (done: number) => void): Promise<void>;
  /** What the strategy booked per room (index = room), in minor units, from its own books. */
  roomTotals(): Promise<Float64Array>;
}

/** Builds a strategy over a log. */
export type StrategyFactory = (log: DeliveryLog) => Strategy;
