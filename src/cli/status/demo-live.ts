// `onceflow demo --serve`: the settlement log played at a watchable pace while the status page is
// up, so a newcomer sees the guarantee hold as it happens: the onceflow ledgers apply each
// delivery (their observer feeds the page's ledger outcomes and store latency) and each guard's
// doubles are a gauge, onceflow's row flat at zero while the naive rows climb. The report and the
// exit code stay those of the ordinary run (runDemo), which follows.
import { createLedger, type Ledger } from '../../index.js';
import { memoryStore } from '../../store/memory/memory-store.js';
import { setNxEx, uniqueIndex } from '../demo/defences.js';
import { generateLog, playerName, roomName } from '../demo/log.js';
import type { Strategy } from '../demo/measure.js';
import { noDedup, perTypeFlags, sequenceGuard } from '../demo/naive.js';
import { SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from '../demo/onceflow.js';
import type { DemoConfig } from '../demo/run.js';
import type { AttachedMetrics } from './metrics-source.js';

// The page samples once a second: a play of 20 s draws a line of 20 points per guard, long enough
// to see the naive rows climb, short enough for a demo. The log is revealed in ticks of 100 ms
// (10 steps per sample) so each sample sees progress.
/** How long the live play of the log takes by default, in ms. */
export const LIVE_PLAY_MS = 20_000;
const TICK_MS = 100;

/** The gauges of the live play, registered on the status registry. */
interface LiveGauges {
  doubled(guard: string, value: number): void;
  delivered(value: number): void;
}

/**
 * Plays `config`'s log over about `durationMs`: every delivery in log order through two onceflow
 * ledgers (C=4 with order, the reference; C=3 without order, one below the derived bound) on a
 * memory store with the metrics' observer, and the naive guards' answers revealed in the same
 * order. A guard's answer to a delivery depends only on the deliveries before it (a per-owner
 * window, a per-player flag), so revealing a whole-log run in order is what a live run answers.
 * Stops early when `signal` aborts.
 */
export async function playLive(
  config: DemoConfig,
  metrics: AttachedMetrics,
  durationMs = LIVE_PLAY_MS,
  signal?: AbortSignal,
): Promise<void> {
  const gauges = liveGauges(metrics);
  const log = generateLog(config);
  const store = metrics.observeStore(memoryStore());
  const ledgers = [
    { id: `onceflow-c${SETTLEMENT_CAPACITY}`, capacity: SETTLEMENT_CAPACITY, order: true },
    { id: `onceflow-c${TOO_SMALL_CAPACITY}-no-order`, capacity: TOO_SMALL_CAPACITY, order: false },
  ].map((l) => ({
    ...l,
    ledger: createLedger({
      store,
      name: l.id,
      capacity: l.capacity,
      horizon: l.order,
      observer: metrics.observer,
    }) as Ledger,
    times: new Uint32Array(log.settlements.length),
    doubled: 0,
  }));
  const guards: Strategy[] = [uniqueIndex, setNxEx(config.ttl * 1000), sequenceGuard, perTypeFlags, noDedup];
  const revealed = await Promise.all(
    guards.map(async (g) => ({
      id: g.id,
      outcome: (await g.run(log)).outcome,
      times: new Uint32Array(log.settlements.length),
      doubled: 0,
    })),
  );
  for (const row of [...ledgers, ...revealed]) gauges.doubled(row.id, 0);
  const total = log.deliveries.length;
  const perTick = Math.max(1, Math.ceil(total / Math.max(1, durationMs / TICK_MS)));
  let delivered = 0;
  for (let start = 0; start < total; start += perTick) {
    if (signal?.aborted) return;
    const tickStarted = performance.now();
    const end = Math.min(total, start + perTick);
    for (let i = start; i < end; i++) {
      const s = log.deliveries[i]?.settlement;
      if (s === undefined) continue;
      delivered++;
      for (const row of ledgers) {
        const entry = {
          owner: playerName(s.player),
          signature: s.signature,
          deltas: { coins: s.net },
          scope: roomName(s.room),
        };
        const r = await row.ledger.apply(row.order ? { ...entry, order: s.createdAt } : entry);
        if (r.outcome === 'applied') count(row, s.id);
      }
      for (const row of revealed) if (row.outcome[i] === 'applied') count(row, s.id);
    }
    for (const row of [...ledgers, ...revealed]) gauges.doubled(row.id, row.doubled);
    gauges.delivered(delivered);
    const rest = TICK_MS - (performance.now() - tickStarted);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

/** One more application of settlement `id` by a row: past the first, a double. */
function count(row: { times: Uint32Array; doubled: number }, id: number): void {
  const t = (row.times[id] = (row.times[id] ?? 0) + 1);
  if (t > 1) row.doubled++;
}

function liveGauges(metrics: AttachedMetrics): LiveGauges {
  const { Gauge } = metrics.client;
  const doubled =
    (metrics.registry.getSingleMetric('onceflow_demo_doubled') as InstanceType<typeof Gauge> | undefined) ??
    new Gauge({
      name: 'onceflow_demo_doubled',
      help: 'Settlements applied more than once so far in the demo, per guard (onceflow: 0).',
      labelNames: ['guard'],
      registers: [metrics.registry],
    });
  const delivered =
    (metrics.registry.getSingleMetric('onceflow_demo_deliveries') as
      | InstanceType<typeof Gauge>
      | undefined) ??
    new Gauge({
      name: 'onceflow_demo_deliveries',
      help: 'Settlement deliveries played so far in the demo (repeats included).',
      registers: [metrics.registry],
    });
  return {
    doubled: (guard, value) => doubled.set({ guard }, value),
    delivered: (value) => delivered.set(value),
  };
}
