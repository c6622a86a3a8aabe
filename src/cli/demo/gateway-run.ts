import { performance } from 'node:perf_hooks';
import { DemoFailure } from '../failure.js';
import { naiveCluster, onceflowCluster } from './gateway-cluster.js';
import { type GatewayDemoConfig, NODES, planGateway } from './gateway-plan.js';
import { runSide, type SideResult } from './gateway-side.js';
import { type DirectionCounts, isClean } from './gateway-tally.js';
import type { DemoProgress } from './run.js';
import { openRunStore } from './run-store.js';

/** One row of the report: one gateway, one direction. */
export interface GatewayRow extends DirectionCounts {
  readonly gateway: 'onceflow' | 'naive';
  readonly direction: 'client-to-server' | 'server-to-client';
}

/** Everything a gateway demo run found; the report and `--json` are views of it. */
export interface GatewayDemoResult {
  readonly config: GatewayDemoConfig;
  /** The store onceflow's nodes shared: `memory` or `Redis`. */
  readonly store: string;
  readonly nodes: number;
  readonly kills: number;
  readonly moves: number;
  readonly rows: GatewayRow[];
  /** Reconnects each side's clients made (after moves and kills). */
  readonly reconnects: { readonly onceflow: number; readonly naive: number };
  /** True when onceflow's rows are clean: nothing lost, doubled or out of order. */
  readonly ok: boolean;
  readonly ms: number;
}

/**
 * Runs `onceflow demo --gateway`: the seeded plan through three onceflow nodes on one store, then
 * the same plan through three naive nodes, each with `config.clients` real clients. On Redis the
 * run's keys (a prefix of its own) are removed at the end, and on an interrupt.
 *
 * Usage (internal to the CLI): `(await runGatewayDemo({ clients: 50, messages: 100, seed: 1 })).ok`
 */
export async function runGatewayDemo(
  config: GatewayDemoConfig,
  onProgress: (progress: DemoProgress) => void = () => {},
): Promise<GatewayDemoResult> {
  const started = performance.now();
  const plan = planGateway(config);
  // On Redis an interrupt stops the side that runs (its clients and nodes closed), then removes
  // the run's keys.
  const run = await openRunStore(config.store);
  const { store } = run;
  let onceflow: SideResult;
  let naive: SideResult;
  try {
    const first = runSide(
      'onceflow',
      (h) => onceflowCluster(store.store, h),
      plan,
      config,
      onProgress,
      run.signal,
    );
    run.running(first);
    onceflow = await first;
    if (run.signal.aborted) throw new DemoFailure('the run was interrupted');
    // The naive side writes nothing to the store: the run's keys can go now.
    await run.release();
    naive = await runSide('naive', (h) => naiveCluster(h), plan, config, onProgress);
  } finally {
    await run.end();
  }
  const rows: GatewayRow[] = [
    { gateway: 'onceflow', direction: 'client-to-server', ...onceflow.toServer },
    { gateway: 'onceflow', direction: 'server-to-client', ...onceflow.toClient },
    { gateway: 'naive', direction: 'client-to-server', ...naive.toServer },
    { gateway: 'naive', direction: 'server-to-client', ...naive.toClient },
  ];
  return {
    config,
    store: store.label,
    nodes: NODES,
    kills: plan.kills,
    moves: plan.moves,
    rows,
    reconnects: { onceflow: onceflow.reconnects, naive: naive.reconnects },
    ok: isClean(onceflow.toServer) && isClean(onceflow.toClient),
    ms: performance.now() - started,
  };
}
