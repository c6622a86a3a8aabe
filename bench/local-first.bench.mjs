// Local-first limits on Redis (docs/limits.md *Local-first limits*): hot keys taken through
// leased shares (createLocalFirstLimiter, shares of 100) next to one store call per take
// (createLimiter), 100 takes in flight. The workload line adds the overshoot measured in one
// untimed pass: 4 nodes (limiters with their own connections) saturating one sliding-log key
// for 3 s, the most admitted in any window against limit and limit + nodes x share.
import { Redis } from 'ioredis';
import { createLimiter, createLocalFirstLimiter } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const HOT_KEYS = 20;
const TAKES = 40_000;
const CONCURRENCY = 100;
// High enough that the hot keys are not refused: the comparison is the cost of a decision.
const LIMIT = { algorithm: 'fixed-window', limit: 1_000_000, window: 1000 };
const LOCAL_FIRST = { nodes: 4, share: 100 };
// The overshoot pass: a limit the 4 nodes saturate.
const OVER = { algorithm: 'sliding-log', limit: 200, window: 1000 };
const OVER_SHARE = 10;
const OVER_NODES = 4;
const OVER_MS = 3000;

const prefix = `bench-local-first:${process.pid}:`;
let client;
let runs = 0;
let overshoot;

async function drive(limiter) {
  let next = 0;
  let allowed = 0;
  const lane = async () => {
    while (next < TAKES) {
      const i = next++;
      if ((await limiter.take(`hot-${i % HOT_KEYS}`)).allowed) allowed++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  if (allowed !== TAKES) throw new Error(`${TAKES - allowed} takes refused under a limit never reached`);
  return TAKES;
}

async function measureOvershoot() {
  const clients = Array.from({ length: OVER_NODES }, () => new Redis(URL));
  const admitted = [];
  const deadline = Date.now() + OVER_MS;
  const p = `${prefix}over:`;
  await Promise.all(
    clients.map(async (c) => {
      const limiter = createLocalFirstLimiter({
        store: createRedisStore({ client: c, prefix: p }),
        ...OVER,
        localFirst: { nodes: OVER_NODES, share: OVER_SHARE },
      });
      const lane = async () => {
        while (Date.now() < deadline) {
          const d = await limiter.take('hot');
          if (d.allowed) admitted.push(d.at);
          else await new Promise((r) => setTimeout(r, 1));
        }
      };
      await Promise.all(Array.from({ length: 8 }, lane));
      await limiter.release();
    }),
  );
  admitted.sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let i = 0; i < admitted.length; i++) {
    while (admitted[from] <= admitted[i] - OVER.window) from++;
    most = Math.max(most, i - from + 1);
  }
  await unlinkPrefix(clients[0], p);
  for (const c of clients) c.disconnect();
  return { most, admitted: admitted.length };
}

export default {
  name: 'local-first',
  title: 'Local-first limits on Redis: hot keys from leased shares vs one store call per take',
  async setup() {
    client = new Redis(URL);
    overshoot = await measureOvershoot();
    return {};
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: () =>
    `${TAKES.toLocaleString('en')} takes over ${HOT_KEYS} hot keys, ${CONCURRENCY} in flight, fixed-window limit ` +
    `${LIMIT.limit.toLocaleString('en')}/s (never reached), localFirst { nodes: 4, share: 100 }; overshoot pass: ` +
    `${OVER_NODES} nodes saturating one sliding-log key (limit ${OVER.limit}/s, share ${OVER_SHARE}) for ${OVER_MS / 1000} s: ` +
    `most admitted in any 1 s window ${overshoot?.most} (limit ${OVER.limit}, bound ${OVER.limit + OVER_NODES * OVER_SHARE}; ` +
    `overshoot ${((((overshoot?.most ?? 0) - OVER.limit) / OVER.limit) * 100).toFixed(1)}% of the limit), ` +
    `${overshoot?.admitted} admitted in all`,
  comparisons: () => [
    {
      name: 'hot keys: local-first vs a store call per take',
      target: 10,
      sides: [
        {
          id: 'local-first',
          label:
            'createLocalFirstLimiter({ store: redis, ...fixed-window, localFirst: { nodes: 4, share: 100 } }).take(key)',
          prepare: () =>
            createLocalFirstLimiter({
              store: createRedisStore({ client, prefix: `${prefix}lf${runs++}:` }),
              ...LIMIT,
              localFirst: LOCAL_FIRST,
            }),
          run: drive,
          dispose: (limiter) => limiter.release(),
        },
        {
          id: 'store-per-take',
          label: 'createLimiter({ store: redis, ...fixed-window }).take(key)',
          prepare: () =>
            createLimiter({
              store: createRedisStore({ client, prefix: `${prefix}plain${runs++}:` }),
              ...LIMIT,
            }),
          run: drive,
        },
      ],
    },
  ],
};
