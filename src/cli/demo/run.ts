import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { setNxEx, ttlCoveringEveryRepeat, uniqueIndex } from './defences.js';
import { type DemoLog, generateLog, playerName, type ScenarioConfig, type ScenarioStats } from './log.js';
import { isExact, measure, type Strategy, type StrategyRow } from './measure.js';
import { noDedup, perTypeFlags, sequenceGuard } from './naive.js';
import { onceflowRow, SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from './onceflow.js';
import { type RequiredCapacity, requiredCapacityOf } from './required-capacity.js';
import { openRunStore } from './run-store.js';

/** Progress of a demo run: a phase label and how many of its steps are done. */
export interface DemoProgress {
  readonly phase: string;
  readonly done: number;
  readonly total: number;
}

/** How to run the demo. */
export interface DemoConfig extends ScenarioConfig {
  /** The short TTL of the `SET NX EX` row, in seconds. */
  readonly ttl: number;
  /** Where the onceflow rows run: `undefined` for the memory store, or a Redis or PostgreSQL URL. */
  readonly store?: string;
}

/** Everything a demo run found; the report and `--json` are views of it. */
export interface DemoResult {
  readonly config: DemoConfig;
  /** The store the onceflow rows ran on: `memory`, `Redis` or `PostgreSQL`. */
  readonly store: string;
  readonly scenario: ScenarioStats & { readonly players: number; readonly rooms: number };
  readonly requiredCapacity: RequiredCapacity;
  /** The signature that needed the most capacity, readable, or `null` when nothing repeated. */
  readonly worst: { readonly owner: string; readonly signature: string } | null;
  /** The `SET NX EX` TTL that would have refused every repeat of this log, in seconds. */
  readonly coveringTtl: number;
  readonly rows: StrategyRow[];
  /** The row exit code 1 is judged on: onceflow at the derived capacity. */
  readonly referenceId: string;
  /** True when the reference row is exact (no loss, doubling, misbooking). */
  readonly ok: boolean;
}

/**
 * Runs the demo: generates the log once, then every strategy over it, each compared with the
 * truth. The onceflow rows run on `config.store`, in a namespace of the run's own, removed at the
 * end (and on an interrupt). No output of its own: progress goes to `onProgress`.
 *
 * Usage (internal to the CLI): `(await runDemo({ ...DEFAULT_DEMO, settlements: 20_000 })).ok // true`
 */
export async function runDemo(
  config: DemoConfig,
  onProgress: (progress: DemoProgress) => void = () => {},
): Promise<DemoResult> {
  onProgress({ phase: 'generating log', done: 0, total: config.settlements });
  const log = generateLog(config);
  const coveringTtl = ttlCoveringEveryRepeat(log);
  const run = await openRunStore(config.store);
  const { store } = run;
  const strategies: Strategy[] = [
    onceflowRow(SETTLEMENT_CAPACITY, true, store, run.signal),
    onceflowRow(TOO_SMALL_CAPACITY, true, store, run.signal),
    onceflowRow(TOO_SMALL_CAPACITY, false, store, run.signal),
    uniqueIndex,
    setNxEx(config.ttl * 1000),
    setNxEx(coveringTtl, true),
    sequenceGuard,
    perTypeFlags,
    noDedup,
  ];
  const rows: StrategyRow[] = [];
  try {
    for (const [i, strategy] of strategies.entries()) {
      const phase = `${i + 1}/${strategies.length} ${strategy.name}`;
      const total = log.stats.settlementDeliveries;
      onProgress({ phase, done: 0, total });
      const row = evaluate(log, strategy, (done) => onProgress({ phase, done, total }));
      run.running(row);
      rows.push(await row);
      await yieldToLoop(); // lets a Ctrl-C between rows be handled
    }
  } finally {
    await run.end();
  }
  const requiredCapacity = requiredCapacityOf(log);
  const worst = log.settlements[requiredCapacity.worstKey];
  const referenceId = `onceflow-c${SETTLEMENT_CAPACITY}`;
  const reference = rows.find((r) => r.id === referenceId);
  return {
    config,
    store: store.label,
    scenario: { ...log.stats, players: log.players, rooms: log.rooms },
    requiredCapacity,
    worst: worst === undefined ? null : { owner: playerName(worst.player), signature: worst.signature },
    coveringTtl: coveringTtl / 1000,
    rows,
    referenceId,
    ok: reference !== undefined && isExact(reference),
  };
}

/** Runs one strategy over the log, timed, and measures it against the truth. */
export async function evaluate(
  log: DemoLog,
  strategy: Strategy,
  progress?: (done: number) => void,
): Promise<StrategyRow> {
  const start = performance.now();
  const run = await strategy.run(log, progress);
  const ms = performance.now() - start;
  return measure(log, run, { id: strategy.id, strategy: strategy.name, ms });
}
