// One side of the gateway demo: real onceflow clients (createClient on `ws`) driven through three
// nodes of one kind by the seeded plan, with every arrival tallied. A client's node is chosen per
// connect (a WebSocket class that ignores the client's URL), so a move is "close, and the next
// connect goes elsewhere", and a killed node's clients come back on a node that is up.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { type Client, createClient } from '../../ws/client/client.js';
import type { WebSocketConstructor } from '../../ws/client/options.js';
import type { JsonValue } from '../../ws/frames.js';
import { DemoFailure } from '../failure.js';
import { type DemoCluster, type DemoHandler, SEND_TYPE } from './gateway-cluster.js';
import { type GatewayDemoConfig, type GatewayPlan, NODES, type PlanStep } from './gateway-plan.js';
import { type DirectionCounts, Tally } from './gateway-tally.js';
import { Prng } from './prng.js';
import type { DemoProgress } from './run.js';

/** What one side's run found. */
export interface SideResult {
  readonly toServer: DirectionCounts;
  readonly toClient: DirectionCounts;
  /** Welcomes after each client's first: reconnects after moves and kills. */
  readonly reconnects: number;
  readonly ms: number;
}

// Reconnect backoff of the demo's clients: full jitter from 50 ms, at most 0.5 s, so a killed
// node's clients are back well within its 0.4-0.9 s of downtime (the client's defaults, 250 ms to
// 10 s, are for a fleet of real users, and would make the run wait on its own backoff).
const RECONNECT = { minMs: 50, maxMs: 500 } as const;
// A handler's own work, 0-3 ms (a store write, a call): long enough that a move or a kill lands
// while some run.
const HANDLER_MS = [0, 3] as const;
// After the workload, a side waits for what is in flight until everything arrived, or nothing
// arrived for QUIET_MS: 4 x the clients' longest backoff (0.5 s), so a client that is reconnecting
// is not given up on; the naive side, which never gets everything, waits that long once.
// DRAIN_MAX_MS caps a run on a box too loaded for the demo.
const QUIET_MS = 2_000;
const DRAIN_MAX_MS = 60_000;
const POLL_MS = 50;
// A connect on loopback takes milliseconds; 10 s is the bound of a box too loaded to run the demo.
const CONNECT_MAX_MS = 10_000;
const OPEN = 1;

/** The user of client `i`: its token, and how the handler finds the client again. */
const userOf = (i: number): string => `c${i}`;
const clientOf = (user: string): number => Number(user.slice(1));
/** Client `i`'s session: 16-64 of [A-Za-z0-9_-], the same on both sides. */
const sessionOf = (i: number): string => `demo-session-${String(i).padStart(6, '0')}`;

/**
 * Runs `plan` through the cluster `make` starts, with `config.clients` clients, and tallies both
 * directions. Everything it started is stopped before it returns; `signal` ends it early (an
 * interrupt: nothing is sent or published after it, so the store can be cleaned up behind it).
 *
 * Usage (internal to the CLI): `await runSide('naive', (h) => naiveCluster(h), plan, config)`
 */
export async function runSide(
  name: string,
  make: (handler: DemoHandler) => Promise<DemoCluster>,
  plan: GatewayPlan,
  config: GatewayDemoConfig,
  onProgress: (progress: DemoProgress) => void = () => {},
  signal?: AbortSignal,
): Promise<SideResult> {
  const started = performance.now();
  const clients = config.clients;
  const toServer = new Tally(clients);
  const toClient = new Tally(clients);
  const handlerRng = new Prng(config.seed ^ 0x5bd1e995);
  const handler: DemoHandler = async (user, body) => {
    await sleep(handlerRng.int(HANDLER_MS[0], HANDLER_MS[1]));
    toServer.arrived(clientOf(user), (body as { n: number }).n);
  };
  const cluster = await make(handler);
  const routeRng = new Prng(config.seed ^ 0x27d4eb2f);
  const assigned = [...plan.firstNode];
  const sockets: (WebSocket | undefined)[] = [];
  const live = (): number[] => [...Array(NODES).keys()].filter((n) => cluster.alive(n));
  const pick = (i: number): string => {
    const up = live();
    if (!up.includes(assigned[i] as number) && up.length > 0)
      assigned[i] = up[routeRng.int(0, up.length - 1)] as number;
    return `ws://127.0.0.1:${cluster.port(assigned[i] as number)}/`;
  };
  let welcomes = 0;
  let settled = 0;
  let pending = 0;
  const failures: unknown[] = [];
  const list: Client[] = [];
  try {
    for (let i = 0; i < clients; i++) {
      const Routed = class extends WebSocket {
        constructor(_url: string, protocols: string[]) {
          super(pick(i), protocols);
          sockets[i] = this;
        }
      };
      const clientRng = new Prng((config.seed + i * 0x9e3779b9) >>> 0);
      const client = createClient({
        url: pick(i),
        WebSocket: Routed as unknown as WebSocketConstructor,
        token: userOf(i),
        session: sessionOf(i),
        reconnect: RECONNECT,
        random: () => clientRng.next(),
      });
      client.on('message', (m) => toClient.arrived(i, (m.body as { n: number }).n));
      client.on('welcome', () => welcomes++);
      client.on('error', () => {}); // drops are the point of the run; the tallies tell what they cost
      list.push(client);
    }
    // A client's first connect starts at its stream's end (there is no position to resume from
    // yet): the workload waits for every client's first welcome, so each receives all it is sent.
    await waitFor(() => welcomes >= clients, CONNECT_MAX_MS);
    const publishing: Promise<void>[] = Array.from({ length: clients }, () => Promise.resolve());
    const total = 2 * clients * config.messages;
    const progress = (): void => {
      let received = 0;
      for (let i = 0; i < clients; i++) received += toClient.count(i);
      onProgress({ phase: `${name} gateway`, done: Math.min(total, settled + received), total });
    };
    const track = (p: Promise<unknown>): void => {
      pending++;
      void p.finally(() => {
        pending--;
        settled++;
      });
    };
    const run = (step: PlanStep): void => {
      if (step.kind === 'send') {
        const client = list[step.client] as Client;
        for (let n = step.from; n < step.from + step.count; n++) {
          const body: JsonValue = { n };
          // The send's own failure (closed at the end) is no finding: the handler's tally is.
          track(client.send(SEND_TYPE, body, { id: `m${n}` }).catch(() => {}));
        }
      } else if (step.kind === 'publish') {
        const user = userOf(step.client);
        const next = (publishing[step.client] as Promise<void>).then(() => cluster.publish(user, step.n));
        publishing[step.client] = next.catch(() => {});
        pending++;
        next.catch((err: unknown) => failures.push(err)).finally(() => pending--);
      } else if (step.kind === 'move') {
        const up = live().filter((n) => n !== assigned[step.client]);
        if (up.length > 0) assigned[step.client] = up[routeRng.int(0, up.length - 1)] as number;
        const ws = sockets[step.client];
        if (ws?.readyState === OPEN) ws.close(1000, 'moving');
      } else if (step.kind === 'kill') {
        cluster.kill(step.node).catch((err: unknown) => failures.push(err));
      } else {
        cluster.restart(step.node).catch((err: unknown) => failures.push(err));
      }
    };
    const start = performance.now();
    for (const step of plan.steps) {
      if (signal?.aborted) break;
      const wait = step.atMs - (performance.now() - start);
      if (wait >= 1) {
        progress();
        await sleep(wait);
      }
      if (signal?.aborted) break;
      run(step);
    }
    await drain(() => {
      let received = 0;
      let short = false;
      for (let i = 0; i < clients; i++) {
        received += toClient.count(i);
        if (toClient.count(i) < config.messages) short = true;
      }
      progress();
      return { arrived: settled + received, done: (pending === 0 && !short) || signal?.aborted === true };
    });
  } finally {
    await Promise.all(list.map((c) => c.close()));
    await cluster.close();
  }
  if (failures.length > 0) throw failures[0];
  const sent = new Array<number>(clients).fill(config.messages);
  return {
    toServer: toServer.counts(sent),
    toClient: toClient.counts(sent),
    reconnects: welcomes - clients,
    ms: performance.now() - started,
  };
}

/** Polls `ready` until true, or fails after `maxMs`. */
async function waitFor(ready: () => boolean, maxMs: number): Promise<void> {
  const deadline = performance.now() + maxMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new DemoFailure(`the clients did not connect within ${maxMs} ms`);
    await sleep(POLL_MS);
  }
}

/** Waits until `look()` says done, or nothing arrived for QUIET_MS, or DRAIN_MAX_MS passed. */
async function drain(look: () => { arrived: number; done: boolean }): Promise<void> {
  const deadline = performance.now() + DRAIN_MAX_MS;
  let last = -1;
  let since = performance.now();
  while (performance.now() < deadline) {
    const { arrived, done } = look();
    if (done) return;
    const now = performance.now();
    if (arrived !== last) {
      last = arrived;
      since = now;
    } else if (now - since >= QUIET_MS) return;
    await sleep(POLL_MS);
  }
}
