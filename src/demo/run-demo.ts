import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { type BoundCheck, checkDeliveryBounds } from './delivery-bounds.js';
import {
  type DeliveryLog,
  playerName,
  type ScenarioStats,
  settlementPayload,
  settlementSignature,
} from './delivery-log.js';
import { isExact, measure, type StrategyRow, truthRoomTotals } from './measure.js';
import { noDedupStrategy } from './no-dedup.js';
import { onceflowStrategy, SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from './onceflow-strategy.js';
import { perTypeFlagsStrategy } from './per-type-flags.js';
import { type RequiredCapacity, requiredCapacityOf } from './required-capacity.js';
import { generateLog, type ScenarioConfig } from './scenario.js';
import { sequenceGuardStrategy } from './sequence-guard.js';
import { createDecisions, type Decisions, type StrategyFactory } from './strategy.js';

/** Progress of a demo run: a phase label and how far it is. */
export interface DemoProgress {
  readonly phase: string;
  readonly done: number;
  readonly total: number;
}

/** Everything a demo run found; the report and `--json` are views of it. */
export interface DemoResult {
  readonly config: ScenarioConfig;
  readonly scenario: ScenarioStats & { readonly players: number; readonly rooms: number };
  readonly requiredCapacity: RequiredCapacity;
  /** The signature that needed the most capacity, readable, or `null` when nothing repeated. */
  readonly worst: { readonly owner: string; readonly signature: string } | null;
  readonly bounds: BoundCheck;
  readonly rows: StrategyRow[];
  /** The row exit code 1 is judged on: onceflow at the derived capacity. */
  readonly referenceId: string;
  /** True when the reference row is exact (no loss, doubling, misbooking). */
  readonly ok: boolean;
  readonly generateMs: number;
}

/** The strategies, in report order: the same log goes through each. */
export const STRATEGIES: readonly StrategyFactory[] = [
  (log) => onceflowStrategy(log, { capacity: SETTLEMENT_CAPACITY, withOrder: true }),
  (log) => onceflowStrategy(log, { capacity: TOO_SMALL_CAPACITY, withOrder: true }),
  (log) => onceflowStrategy(log, { capacity: TOO_SMALL_CAPACITY, withOrder: false }),
  sequenceGuardStrategy,
  perTypeFlagsStrategy,
  noDedupStrategy,
];

// Deliveries between yields to the event loop: small enough that the progress bar redraws
// several times a second, large enough that the yields cost nothing measurable.
const CHUNK = 16_384;
const WARMUP = 20_000;

/**
 * Runs the demo: generates the log once, measures the capacity it required, then runs every
 * strategy over the same log and compares each with the truth. No output of its own: progress
 * goes to `onProgress`, the result is returned.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const result = await runDemo({ ...DEFAULT_SCENARIO, settlements: 20_000 });
 *     result.ok; // true: the onceflow capacity-4 row is exact
 */
export async function runDemo(
  config: ScenarioConfig,
  onProgress: (progress: DemoProgress) => void = () => {},
  strategies: readonly StrategyFactory[] = STRATEGIES,
  referenceId = `onceflow-c${SETTLEMENT_CAPACITY}`,
): Promise<DemoResult> {
  const t0 = performance.now();
  const log = generateLog(config, (done, total) => onProgress({ phase: 'generating log', done, total }));
  const generateMs = performance.now() - t0;
  const requiredCapacity = requiredCapacityOf(log);
  const bounds = checkDeliveryBounds(log);
  const truth = truthRoomTotals(log);
  const decisions = createDecisions(log.length);

  const rows: StrategyRow[] = [];
  for (const factory of strategies) {
    rows.push(await evaluateStrategy(log, factory, decisions, truth, onProgress));
  }
  const reference = rows.find((r) => r.id === referenceId);
  return {
    config,
    scenario: { ...log.stats, players: log.players, rooms: log.rooms },
    requiredCapacity,
    worst:
      requiredCapacity.worstKey < 0
        ? null
        : {
            owner: playerName(requiredCapacity.worstOwner),
            signature: settlementSignature(settlementPayload(log.settlements, requiredCapacity.worstKey)),
          },
    bounds,
    rows,
    referenceId,
    ok: reference === undefined ? true : isExact(reference),
    generateMs: Math.round(generateMs),
  };
}

/**
 * Runs one strategy over a log (after a short untimed warm-up on a throwaway instance) and
 * measures it against the truth. `decisions` and `truth` can be passed in to share them
 * between strategies.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const row = await evaluateStrategy(log, noDedupStrategy);
 *     row.moneyDoubled; // what the repeats cost
 */
export async function evaluateStrategy(
  log: DeliveryLog,
  factory: StrategyFactory,
  decisions: Decisions = createDecisions(log.length),
  truth: Float64Array = truthRoomTotals(log),
  onProgress: (progress: DemoProgress) => void = () => {},
): Promise<StrategyRow> {
  const strategy = factory(log);
  let ms = 0;
  if (strategy.runAll) {
    decisions.outcome.fill(0); // it writes only the deliveries its workers decided
    const start = performance.now();
    await strategy.runAll(decisions, (done) => onProgress({ phase: strategy.name, done, total: log.length }));
    ms = performance.now() - start;
    const books = await strategy.roomTotals();
    return measure(log, decisions, books, truth, { id: strategy.id, strategy: strategy.name, ms });
  }
  // Warm the JIT on a throwaway instance (its decisions are overwritten below), so the first row
  // is not charged for compiling code the others then reuse.
  await factory(log).run(0, Math.min(log.length, WARMUP), decisions);
  for (let from = 0; from < log.length; from += CHUNK) {
    const to = Math.min(log.length, from + CHUNK);
    const start = performance.now();
    await strategy.run(from, to, decisions);
    ms += performance.now() - start;
    onProgress({ phase: strategy.name, done: to, total: log.length });
    await yieldToLoop();
  }
  const books = await strategy.roomTotals();
  return measure(log, decisions, books, truth, { id: strategy.id, strategy: strategy.name, ms });
}
