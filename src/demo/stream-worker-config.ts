/** What a settlement event in the demo's stream carries: enough to rebuild its ledger entry. */
export interface StreamSettlement {
  /** The ledger owner (`player-<n>`). */
  readonly player: string;
  /** The room it was played in: the scope it is booked under. */
  readonly room: string;
  readonly round: number;
  readonly net: number;
  readonly final: boolean;
  /** Its creation time in the log, the entry's `order` (so the horizon can answer `stale`). */
  readonly order: number;
}

/** How a stream worker consumes: onceflow's ledger path, or the naive effect-then-ack loop. */
export type StreamWorkerMode = 'onceflow' | 'naive';

/** What the coordinator passes to a stream worker process (as JSON in {@link STREAM_WORKER_ENV}). */
export interface StreamWorkerConfig {
  readonly mode: StreamWorkerMode;
  readonly url: string;
  /** The run's own key prefix: the ledger's keys and the naive row's counters live under it. */
  readonly prefix: string;
  readonly stream: string;
  readonly group: string;
  /** This process's consumer name: a replacement of a killed worker gets a new one. */
  readonly consumer: string;
  readonly claimIdleMs: number;
}

/**
 * The environment variable that carries a stream worker's {@link StreamWorkerConfig}: in the
 * environment, not the arguments, because the URL may hold a password and `ps` shows arguments.
 */
export const STREAM_WORKER_ENV = 'ONCEFLOW_DEMO_STREAM_WORKER';

/** The naive row's counters under the run's prefix (HINCRBY per room and per player, a bit per delivery). */
export function naiveKeys(prefix: string): { rooms: string; players: string; seen: string } {
  return { rooms: `${prefix}naive:rooms`, players: `${prefix}naive:players`, seen: `${prefix}naive:seen` };
}
