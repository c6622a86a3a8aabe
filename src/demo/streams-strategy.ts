import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { createLedger } from '../index.js';
import {
  type DeliveryLog,
  playerName,
  roomName,
  settlementPayload,
  settlementSignature,
} from './delivery-log.js';
import { DemoFailure } from './failure.js';
import { once, onInterrupt } from './interrupt.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { Prng } from './prng.js';
import { redactUrl } from './redact-url.js';
import { openRedisLedger } from './redis-ledger.js';
import { runNamespace, type SharedLedgerHandle } from './shared-ledger.js';
import { Decision, type Decisions, type StrategyFactory } from './strategy.js';
import {
  naiveKeys,
  STREAM_WORKER_ENV,
  type StreamSettlement,
  type StreamWorkerConfig,
  type StreamWorkerMode,
} from './stream-worker-config.js';

/** Where and how the streams rows run. */
export interface StreamsDemoOptions {
  readonly url: string;
  readonly workers: number;
}

/** The row id of onceflow through Redis Streams (it decides the exit code with `--streams`). */
export const STREAMS_ROW_ID = `onceflow-streams-c${SETTLEMENT_CAPACITY}`;
/** The row id of the naive at-least-once stream consumer. */
export const NAIVE_STREAMS_ROW_ID = 'naive-streams';

/** Workers SIGKILLed per row, each replaced by a new consumer. */
export const KILLS = 3;
// 500 ms: a killed consumer's entries are reclaimed this long after it last touched them; its
// live peers touch theirs every 500 / 3 ms, far more often than a local Redis round trip takes,
// so no entry of a live consumer is taken from it. Short, so the run waits little after a kill.
const CLAIM_IDLE_MS = 500;
// Kills come at least this far apart (~300 ms, as the issue asks), and only while entries are in flight.
const KILL_EVERY_MS = 300;
// Deliveries published per step, and the most in flight (unread or pending) before the next step:
// the transport's delivery bound. Consumers of one group race over the same entries, so one
// player's deliveries can overtake each other by up to ~2 x 16 / 64 active players (scenario.ts)
// < 1 position; the log itself already needs all of capacity 4 (the report's "Capacity this log
// required"), so any more reordering can evict a signature early and the horizon answers `stale`
// (a bound of 64 lets ~170 of 20,000 first deliveries go stale, 16 none on an idle machine; what
// load still makes stale, the run reconciles with ledger.resolve, as users would).
const IN_FLIGHT = 16;
// The coordinator polls the groups' progress this often: a few round trips per step.
const POLL_MS = 2;

/**
 * The two rows of `onceflow demo --redis URL --streams`: the log's settlement deliveries go through
 * one Redis stream under the run's prefix, consumed by `workers` processes in a group, some of them
 * SIGKILLed mid-run and replaced. First onceflow's consumer (the ledger path: fence, booking and
 * XACK in one script), then a naive one (the effect, then XACK) on the same stream in a group of its
 * own. Everything under the run's prefix is removed at the end, also on failure.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const rows = streamsStrategies(config.seed, { url: 'redis://127.0.0.1:6379', workers: 3 });
 */
export function streamsStrategies(seed: number, options: StreamsDemoOptions): StrategyFactory[] {
  let run: StreamRun | undefined;
  const runOf = (log: DeliveryLog) => {
    if (run?.log !== log) run = new StreamRun(log, options, seed);
    return run;
  };
  const row = (mode: StreamWorkerMode, id: string, name: (kills: number) => string): StrategyFactory => {
    return (log) => {
      const shared = runOf(log);
      let kills = KILLS;
      return {
        id,
        // Read by the report after the run: the kills that happened, not the ones planned.
        get name() {
          return name(kills);
        },
        run() {
          throw new Error('the streams rows run whole, through runAll');
        },
        async runAll(out, onProgress) {
          try {
            kills = await shared.consume(mode, out, onProgress);
          } catch (err) {
            await shared.release();
            throw err;
          }
        },
        async roomTotals() {
          try {
            return await shared.roomTotals(mode);
          } catch (err) {
            await shared.release();
            throw err;
          } finally {
            if (mode === 'naive') await shared.release();
          }
        },
      };
    };
  };
  const n = options.workers;
  return [
    row(
      'onceflow',
      STREAMS_ROW_ID,
      (k) => `onceflow via Redis Streams (capacity ${SETTLEMENT_CAPACITY}, ${n} consumers, ${k} kills)`,
    ),
    row('naive', NAIVE_STREAMS_ROW_ID, (k) => `naive stream consumer (no dedup, ${n} consumers, ${k} kills)`),
  ];
}

/** One run's stream, its connections and its workers. */
class StreamRun {
  readonly log: DeliveryLog;
  readonly #options: StreamsDemoOptions;
  readonly #prng: Prng;
  readonly #prefix = runNamespace('redis');
  readonly #stream: string;
  #handle: SharedLedgerHandle | undefined;
  #client: Redis | undefined;
  #published = false;
  #settlementDeliveries = 0;
  /** The workers of the row running now: what an interrupt stops before the clean-up. */
  #workers = new Set<Worker>();
  #forget = () => {};

  constructor(log: DeliveryLog, options: StreamsDemoOptions, seed: number) {
    this.log = log;
    this.#options = options;
    this.#prng = new Prng(seed);
    // A hash tag, so the stream's own keys (`:dead`, `:attempts`, the producer's `:dedup:*`) are
    // named `<stream>:...` and stay under the run's prefix, where the clean-up finds them.
    this.#stream = `${this.#prefix}{settlements}`;
    for (let i = 0; i < log.length; i++) if ((log.ref[i] as number) >= 0) this.#settlementDeliveries++;
  }

  async #open(): Promise<Redis> {
    if (this.#client) return this.#client;
    // Connects with the demo's checks (URL named and redacted, TLS hint, SELECT refused); the
    // ledger handle also reads the totals and removes the run's keys.
    this.#handle = await openRedisLedger(this.#options.url, this.#prefix);
    const { Redis } = await import('ioredis');
    const client = new Redis(this.#options.url, { maxRetriesPerRequest: 3 });
    client.on('error', () => {}); // a failing command rejects on its own
    this.#client = client;
    // An interrupt (SIGINT, SIGTERM) stops the workers first, so that none writes after the
    // clean-up, then removes the run's keys as its end does.
    this.#forget = onInterrupt(async () => {
      for (const w of this.#workers) w.child.kill('SIGKILL');
      await Promise.allSettled([...this.#workers].map((w) => w.exited));
      await this.release();
    });
    return client;
  }

  /** Runs one row's consumers over the stream; returns how many workers it killed. */
  async consume(mode: StreamWorkerMode, out: Decisions, onProgress: (done: number) => void): Promise<number> {
    const client = await this.#open();
    const group = mode;
    await client.call('XGROUP', 'CREATE', this.#stream, group, '0', 'MKSTREAM');
    const { createStreamProducer } = await import('../streams/index.js');
    const producer = this.#published ? undefined : createStreamProducer({ client, stream: this.#stream });
    const workers = new Set<Worker>();
    this.#workers = workers;
    let serial = 0;
    const start = () => {
      const w = startWorker({
        mode,
        url: this.#options.url,
        prefix: this.#prefix,
        stream: this.#stream,
        group,
        consumer: `${mode}-${serial++}`,
        claimIdleMs: CLAIM_IDLE_MS,
      });
      workers.add(w);
    };
    try {
      for (let i = 0; i < this.#options.workers; i++) start();
      const log = this.log;
      const total = this.#settlementDeliveries;
      let next = 0; // the next delivery of the log to publish
      let published = this.#published ? total : 0;
      let kills = 0;
      let lastKill = Date.now();
      let draining = false; // after a kill: publish nothing until the group has caught up
      for (;;) {
        for (const w of workers) if (w.failed) throw w.failed;
        const { pending, lag } = await groupState(client, this.#stream, group);
        const inFlight = pending + (lag ?? Number.POSITIVE_INFINITY);
        onProgress(Math.max(0, published - inFlight));
        if (inFlight === 0) draining = false;
        if (published === total && inFlight === 0) break;
        if (
          kills < KILLS &&
          pending > 0 &&
          Date.now() - lastKill >= KILL_EVERY_MS &&
          published - inFlight >= (total * (kills + 1)) / (KILLS + 2)
        ) {
          const live = [...workers].filter((w) => !w.killed);
          const victim = live[this.#prng.int(0, live.length - 1)] as Worker;
          victim.killed = true;
          victim.child.kill('SIGKILL');
          await victim.exited;
          workers.delete(victim);
          start();
          kills++;
          lastKill = Date.now();
          draining = true;
        }
        if (producer && !draining && published < total && inFlight < IN_FLIGHT) {
          const batch: Promise<string>[] = [];
          while (batch.length < IN_FLIGHT && next < log.length) {
            const i = next++;
            const id = log.ref[i] as number;
            if (id < 0) continue; // a join: onceflow needs no notion of where a player sits
            // The delivery's index as the producer's id: every copy is one of the transport's
            // at-least-once deliveries, so the producer must not dedup them away.
            batch.push(producer.publish(streamEvent(log, id), { id: String(i) }));
          }
          await Promise.all(batch);
          published += batch.length;
          continue;
        }
        await sleep(POLL_MS);
      }
      this.#published = true;
      await producer?.close();
      await stopAll(workers);
      await this.#decide(mode, out);
      return kills;
    } catch (err) {
      for (const w of workers) w.child.kill('SIGKILL');
      await Promise.allSettled([...workers].map((w) => w.exited));
      await producer?.close().catch(() => {});
      throw err;
    }
  }

  async #decide(mode: StreamWorkerMode, out: Decisions): Promise<void> {
    const client = this.#client as Redis;
    const log = this.log;
    const table = log.settlements;
    if (mode === 'naive') {
      const seen = (await client.getBuffer(naiveKeys(this.#prefix).seen)) ?? Buffer.alloc(0);
      for (let i = 0; i < log.length; i++) {
        const id = log.ref[i] as number;
        if (id < 0) continue;
        // SETBIT numbers bits from the most significant bit of each byte.
        const bit = ((seen[i >> 3] ?? 0) >> (7 - (i & 7))) & 1;
        if (bit === 1) {
          out.outcome[i] = Decision.APPLIED;
          out.room[i] = table.room[id] as number;
        }
      }
      return;
    }
    // What the ledger booked, per player: a booked signature counts as applied once, for its
    // first delivery; every other delivery of a settlement was refused (blocked) or dead-lettered.
    const ledger = createLedger({
      store: (await import('../redis/index.js')).createRedisStore({ client, prefix: this.#prefix }),
      capacity: SETTLEMENT_CAPACITY,
    });
    const stale = new Set<number>();
    for (const [, fields] of await xrangeAll(client, `${this.#stream}:dead`)) {
      const at = (name: string) => fields[fields.indexOf(name) + 1];
      if (at('reason') === 'ledger-stale' && at('id') !== undefined) stale.add(Number(at('id')));
    }
    // A stale answer is referred to reconciliation, and the demo reconciles as a user would:
    // `ledger.resolve` of the same entry books it when the journal proves it never was (the
    // journal is kept whole here), answers duplicate when it was. Consumers of one group take a
    // player's entries in parallel, so a late one can find its signature evicted, under load.
    for (const i of [...stale]) {
      const id = log.ref[i] as number;
      const payload = settlementPayload(table, id);
      const r = await ledger.resolve({
        owner: playerName(table.player[id] as number),
        signature: settlementSignature(payload),
        deltas: { coins: payload.net },
        scope: roomName(table.room[id] as number),
        order: table.order[id] as number,
      });
      if (r.outcome !== 'unknown') stale.delete(i);
    }
    const booked: Set<string>[] = [];
    for (let p = 0; p < log.players; p++) {
      const entries = await ledger.journal({ owner: playerName(p) });
      booked.push(new Set(entries.map((e) => e.signature)));
    }
    for (let i = 0; i < log.length; i++) {
      const id = log.ref[i] as number;
      if (id < 0) continue;
      const signature = settlementSignature(settlementPayload(table, id));
      const mine = booked[table.player[id] as number] as Set<string>;
      if (stale.has(i)) out.outcome[i] = Decision.STALE;
      else if (mine.delete(signature)) {
        out.outcome[i] = Decision.APPLIED;
        out.room[i] = table.room[id] as number;
      } else out.outcome[i] = Decision.BLOCKED;
    }
  }

  async roomTotals(mode: StreamWorkerMode): Promise<Float64Array> {
    const totals = new Float64Array(this.log.rooms);
    if (mode === 'naive') {
      const rooms = await (this.#client as Redis).hgetall(naiveKeys(this.#prefix).rooms);
      for (let r = 0; r < this.log.rooms; r++) totals[r] = Number(rooms[roomName(r)] ?? 0);
      return totals;
    }
    const ledger = (this.#handle as SharedLedgerHandle).ledger;
    for (let r = 0; r < this.log.rooms; r++) {
      const coins = (await ledger.totals(roomName(r))).coins;
      totals[r] = coins === undefined ? 0 : Number(coins);
    }
    return totals;
  }

  /**
   * Removes everything under the run's prefix and closes the connections, once: a later call (the
   * other row, an interrupt during the run's own failure handling) waits for that one.
   */
  readonly release = once(async () => {
    const handle = this.#handle;
    const client = this.#client;
    this.#handle = undefined;
    this.#client = undefined;
    try {
      await handle?.cleanup();
    } finally {
      await client?.quit().catch(() => {});
      await handle?.close();
      // Only now: a Ctrl-C during the clean-up still finds the handler, which waits for it.
      this.#forget();
    }
  });
}

/** The event a settlement delivery is published as. */
function streamEvent(log: DeliveryLog, id: number): StreamSettlement {
  const table = log.settlements;
  const payload = settlementPayload(table, id);
  return {
    player: playerName(table.player[id] as number),
    room: payload.room,
    round: payload.round,
    net: payload.net,
    final: payload.final,
    order: table.order[id] as number,
  };
}

/** A group's pending count and lag (XINFO GROUPS); lag is null when Redis cannot tell. */
async function groupState(
  client: Redis,
  stream: string,
  group: string,
): Promise<{ pending: number; lag: number | null }> {
  const groups = (await client.call('XINFO', 'GROUPS', stream)) as unknown[][];
  for (const g of groups) {
    const field = (name: string) => g[g.indexOf(name) + 1];
    if (field('name') !== group) continue;
    const lag = field('lag');
    return { pending: Number(field('pending')), lag: lag === null ? null : Number(lag) };
  }
  throw new DemoFailure(`the stream's group ${group} is gone`);
}

async function xrangeAll(client: Redis, stream: string): Promise<[string, string[]][]> {
  const out: [string, string[]][] = [];
  let from = '-';
  for (;;) {
    const page = await client.xrange(stream, from, '+', 'COUNT', 1000);
    out.push(...page);
    if (page.length < 1000) return out;
    from = `(${(page[page.length - 1] as [string, string[]])[0]}`;
  }
}

/** A running stream worker process. */
interface Worker {
  readonly child: ChildProcess;
  /** Set when the coordinator SIGKILLed it on purpose. */
  killed: boolean;
  /**
   * Set when the coordinator SIGTERMed it at the end of the run (the group settled: it holds
   * nothing). A worker still starting has no handler for SIGTERM yet and dies of it: a stop too.
   */
  stopping: boolean;
  /** Set when it exited by itself, or with an error: the run cannot be judged. */
  failed: DemoFailure | undefined;
  readonly exited: Promise<void>;
}

function startWorker(config: StreamWorkerConfig): Worker {
  const script = fileURLToPath(new URL('./stream-worker.js', import.meta.url));
  const child = spawn(process.execPath, [script], {
    // The IPC channel only tells the worker when this process is gone (see stream-worker.ts).
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    env: { ...process.env, [STREAM_WORKER_ENV]: JSON.stringify(config) },
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const worker: Worker = {
    child,
    killed: false,
    stopping: false,
    failed: undefined,
    exited: Promise.resolve(),
  };
  const exited = new Promise<void>((resolve) => {
    const fail = (how: string) => {
      const said = stderr.trim();
      worker.failed = new DemoFailure(
        redactUrl(`demo stream worker ${config.consumer} ${how}${said ? `: ${said}` : ''}`),
      );
    };
    child.once('error', (err) => {
      fail(`could not start (${err.message})`);
      resolve();
    });
    child.once('exit', (code, signal) => {
      const stopped = worker.stopping && signal === 'SIGTERM';
      if (!worker.killed && !stopped && code !== 0)
        fail(code === null ? `was killed (${signal})` : `exited with ${code}`);
      resolve();
    });
  });
  (worker as { exited: Promise<void> }).exited = exited;
  return worker;
}

/** SIGTERMs every worker (each finishes and acks what it holds) and waits for their exits. */
async function stopAll(workers: Set<Worker>): Promise<void> {
  for (const w of workers) {
    w.stopping = true;
    w.child.kill('SIGTERM');
  }
  await Promise.all([...workers].map((w) => w.exited));
  for (const w of workers) if (w.failed) throw w.failed;
}
