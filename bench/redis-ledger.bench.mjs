// Ledger apply on Redis at concurrency 200, next to (a) a minimal EVALSHA script through the same
// ioredis client — the ceiling of "one script per event" — and (b) rate-limiter-flexible's
// RateLimiterRedis.consume, the familiar "one atomic Redis step per event" library call.
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createLedger, defineSignature } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';
import {
  checkOutcomes,
  playerLanes,
  registerRooms,
  runLanes,
  settlementEntry,
  settlementStream,
} from './lib/workload.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PLAYERS = 2_000;
const ROUNDS = 6; // 6 rounds x 2 000 players x 2 settlements + ~22% repeats ≈ 29 000 deliveries per run
const DUP_RATE = 0.22;
// 200 calls in flight (a busy service's concurrency: more than one script batch of 128 applies
// per turn), each lane owning the players of one partition and applying their deliveries in order
// (as consumers of a partitioned queue would).
const CONCURRENCY = 200;
const MINIMAL = "return redis.call('INCR', KEYS[1])";

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

let client;
let stream;
let lanes;
let minimalSha;
const prefix = `bench-redis:${process.pid}:`;
let runs = 0;

/** Runs `step(i)` for every delivery, in the lanes of playerLanes; resolves to how many ran. */
async function inLanes(step) {
  await runLanes(lanes, step);
  return stream.length;
}

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
async function newLedger() {
  const name = `run${runs++}`;
  const ledger = createLedger({
    store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } }),
    capacity: 4,
    name,
  });
  await registerRooms(ledger, stream); // untimed
  return ledger;
}

const apply = (ledger) =>
  inLanes((i) =>
    ledger.apply({
      owner: stream.owners[i],
      signature: stream.signatures[i],
      deltas: { coins: stream.nets[i] },
      scope: stream.rooms[i],
    }),
  );

const onceflowSide = {
  id: 'onceflow',
  label: 'createLedger({ store: createRedisStore(...), capacity: 4 }).apply(...)',
  prepare: newLedger,
  run: apply,
  async verify() {
    const ledger = await newLedger();
    const counts = { applied: 0, duplicate: 0, stale: 0 };
    await inLanes(async (i) => {
      counts[(await ledger.apply(settlementEntry(stream, i))).outcome]++;
    });
    checkOutcomes(stream, counts);
  },
};

export default {
  name: 'redis-ledger',
  title: `Ledger apply on Redis (concurrency ${CONCURRENCY}) vs a minimal EVALSHA and RateLimiterRedis.consume`,
  async setup() {
    client = new Redis(URL);
    minimalSha = await client.script('LOAD', MINIMAL);
    stream = settlementStream({ sign: settlement, players: PLAYERS, rounds: ROUNDS, dupRate: DUP_RATE });
    lanes = playerLanes(stream, CONCURRENCY);
    return stream;
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: (s) =>
    `${s.length.toLocaleString('en')} deliveries to ${PLAYERS.toLocaleString('en')} players ` +
    `(${s.fresh.toLocaleString('en')} fresh, ${s.duplicates.toLocaleString('en')} repeats), ` +
    `${CONCURRENCY} lanes partitioned by player, one local Redis (${URL})`,
  comparisons: () => [
    {
      name: 'vs minimal EVALSHA (the ceiling)',
      note: `the same client sends EVALSHA "${MINIMAL}" keyed by player, once per delivery`,
      target: 0.7,
      sides: [
        onceflowSide,
        {
          id: 'evalsha',
          label: 'client.evalsha(minimal INCR script, 1, player key)',
          prepare: () => `${prefix}min${runs++}:`,
          run: (p) => inLanes((i) => client.evalsha(minimalSha, 1, `${p}{${stream.owners[i]}}`)),
        },
      ],
    },
    {
      name: 'vs RateLimiterRedis.consume',
      note: 'points 1e9 (never rejects), duration 600 s, same ioredis client',
      target: 2,
      sides: [
        onceflowSide,
        {
          id: 'rlf-redis',
          label: 'new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 600 }).consume(player)',
          prepare: () =>
            new RateLimiterRedis({
              storeClient: client,
              points: 1e9,
              duration: 600,
              keyPrefix: `${prefix}rlf${runs++}`,
            }),
          run: (limiter) => inLanes((i) => limiter.consume(stream.owners[i])),
        },
      ],
    },
  ],
};
