// The seeded script of `onceflow demo --gateway`: when each client sends a burst of messages, when
// the backend publishes to each user, when a client moves to another node and when a node is
// killed and comes back. Pure: the same config gives the same plan on every machine, and both
// gateways (onceflow and the naive one) run the same plan.
import { Prng } from './prng.js';

/** How to run the gateway demo. */
export interface GatewayDemoConfig {
  /** Clients, each its own user with its own session. */
  readonly clients: number;
  /** Messages each client sends, and messages the backend publishes to each client's user. */
  readonly messages: number;
  readonly seed: number;
  /** `undefined` for the memory store shared by the in-process nodes, or a Redis URL. */
  readonly store?: string;
}

/** Gateway nodes of the demo: the fewest where a killed node's clients still have two to choose from. */
export const NODES = 3;
/**
 * The workload's length. 5 s fits three node kills of up to 0.9 s each, spaced 1.25 s apart, with
 * their clients back before the next one, and keeps a default run (both gateways plus their
 * drains) within 10-20 s.
 */
export const WORKLOAD_MS = 5_000;
// Each message a client sends belongs to a burst of 1-8 (chat lines, game actions come in
// clusters): a burst keeps several messages in flight, so a move or a kill finds some unacked.
const MAX_BURST = 8;
// Each client moves to another node twice in the run (a load balancer's rebalancing, a phone
// switching networks).
const MOVES_PER_CLIENT = 2;
// Kills at 20 %, 45 % and 70 % of the workload (+-5 %), each node once, down 0.4-0.9 s.
const KILL_AT = [0.2, 0.45, 0.7] as const;
const KILL_JITTER = 0.05;
const DOWN_MS = [400, 900] as const;

/** One step of the plan, at `atMs` after the workload starts. */
export type PlanStep =
  | {
      readonly atMs: number;
      readonly kind: 'send';
      readonly client: number;
      readonly from: number;
      readonly count: number;
    }
  | { readonly atMs: number; readonly kind: 'publish'; readonly client: number; readonly n: number }
  | { readonly atMs: number; readonly kind: 'move'; readonly client: number }
  | { readonly atMs: number; readonly kind: 'kill'; readonly node: number }
  | { readonly atMs: number; readonly kind: 'restart'; readonly node: number };

/** The plan: steps in time order, and each client's first node. */
export interface GatewayPlan {
  readonly steps: readonly PlanStep[];
  readonly firstNode: readonly number[];
  readonly kills: number;
  readonly moves: number;
}

/**
 * The seeded plan of a run. Messages are numbered 1..messages per client in each direction; sends
 * and publishes fall in the first 90 % of the workload, so the last ones meet the last faults.
 *
 * Usage (internal to the CLI): `planGateway({ clients: 50, messages: 100, seed: 1 }).steps`
 */
export function planGateway(config: GatewayDemoConfig): GatewayPlan {
  const rng = new Prng(config.seed);
  const steps: PlanStep[] = [];
  const spread = 0.9 * WORKLOAD_MS;
  const firstNode: number[] = [];
  for (let client = 0; client < config.clients; client++) {
    firstNode.push(rng.int(0, NODES - 1));
    const bursts: number[] = [];
    for (let left = config.messages; left > 0; ) {
      const count = Math.min(left, rng.int(1, MAX_BURST));
      bursts.push(count);
      left -= count;
    }
    const times = sortedTimes(rng, bursts.length, spread);
    let from = 1;
    for (const [i, count] of bursts.entries()) {
      steps.push({ atMs: times[i] as number, kind: 'send', client, from, count });
      from += count;
    }
    for (const [i, atMs] of sortedTimes(rng, config.messages, spread).entries())
      steps.push({ atMs, kind: 'publish', client, n: i + 1 });
    for (let m = 0; m < MOVES_PER_CLIENT; m++)
      steps.push({ atMs: rng.int(0.05 * WORKLOAD_MS, 0.95 * WORKLOAD_MS), kind: 'move', client });
  }
  const order = shuffled(rng, [...Array(NODES).keys()]);
  for (const [i, at] of KILL_AT.entries()) {
    const node = order[i] as number;
    const atMs = Math.round((at + (rng.next() * 2 - 1) * KILL_JITTER) * WORKLOAD_MS);
    steps.push({ atMs, kind: 'kill', node });
    steps.push({ atMs: atMs + rng.int(DOWN_MS[0], DOWN_MS[1]), kind: 'restart', node });
  }
  // A stable sort: steps at the same millisecond keep the order they were planned in.
  steps.sort((a, b) => a.atMs - b.atMs);
  return { steps, firstNode, kills: KILL_AT.length, moves: MOVES_PER_CLIENT * config.clients };
}

function sortedTimes(rng: Prng, count: number, spanMs: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < count; i++) times.push(Math.floor(rng.next() * spanMs));
  return times.sort((a, b) => a - b);
}

function shuffled<T>(rng: Prng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
