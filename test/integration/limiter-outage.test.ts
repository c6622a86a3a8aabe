// Takes answered without Redis (degraded-deny, -allow, -local) while the server is down or
// stalled must never be charged when it comes back: not from ioredis's offline queue, not from
// its re-sent unfulfilled commands, not from commands already in the socket when the limiter
// stopped waiting. Each case runs every algorithm on a redis-server this file starts (and kills,
// restarts with its AOF, or stops with SIGSTOP), and compares each key's remaining with a model
// limiter on the memory store fed only the takes Redis answered.
import { rmSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { createLimiter, type Decision, type DegradedPolicy, type Limiter, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { type StartedRedis, startRedis } from '../support/redis-servers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ready = async (client: Redis) => {
  for (let i = 0; i < 400 && client.status !== 'ready'; i++) await sleep(25);
  expect(client.status).toBe('ready');
};
const ALGORITHMS = ['fixed-window', 'sliding-window', 'gcra', 'sliding-log'] as const;
const POLICIES: DegradedPolicy[] = ['deny', 'allow', { mode: 'local', share: 0.5 }];
// Every state is written to the AOF before the reply: a killed server restarts with all of it.
const AOF = ['--appendonly', 'yes', '--appendfsync', 'always'];

// Client options under test. Reconnects every 100 ms: 20 retries (the default
// maxRetriesPerRequest) are ~2 s, longer than an outage here, so the offline queue is still held
// when the server returns (what replayed the degraded takes).
const CLIENTS: [string, RedisOptions][] = [
  ['default options', {}],
  ['enableOfflineQueue: false', { enableOfflineQueue: false }],
  ['maxRetriesPerRequest: null', { maxRetriesPerRequest: null }],
  ['commandTimeout: 30', { commandTimeout: 30 }],
  ['autoResendUnfulfilledCommands: false', { autoResendUnfulfilledCommands: false }],
];

describe('limiter takes answered during a Redis outage are never charged later', () => {
  let server: StartedRedis;
  beforeAll(async () => {
    server = await startRedis(AOF);
  });
  afterAll(async () => {
    await server.stop();
    rmSync(server.dir, { recursive: true, force: true });
  });

  for (const mode of ['restart', 'stall'] as const) {
    for (const [label, options] of CLIENTS) {
      it(`${mode}, ${label}`, { timeout: 30_000 }, async () => {
        const client = new Redis({ port: server.port, retryStrategy: () => 100, ...options });
        client.on('error', () => {});
        try {
          await ready(client);
          const clock = new FakeClock(1_000_000);
          const store = createRedisStore({ client, prefix: `outage:${mode}:${label}:` });
          const model = memoryStore({ clock });
          const make = (algorithm: (typeof ALGORITHMS)[number], i: number, onStore: boolean): Limiter =>
            createLimiter({
              store: onStore ? store : model,
              name: algorithm,
              algorithm,
              limit: 100,
              window: '1h',
              clock,
              blockCache: false,
              degraded: POLICIES[i % POLICIES.length],
              timeout: '50ms',
            });
          const limiters = ALGORITHMS.map((a, i) => ({ a, real: make(a, i, true), model: make(a, i, false) }));
          // The model sees exactly the takes Redis answered.
          const takeBoth = async (l: (typeof limiters)[number], key: string): Promise<Decision> => {
            const d = await l.real.take(key);
            if (!d.reason.startsWith('degraded')) await l.model.take(key);
            return d;
          };
          for (const l of limiters) for (let i = 0; i < 10; i++) await takeBoth(l, 'k');

          if (mode === 'restart') await server.stop();
          else server.process.kill('SIGSTOP');
          // 300 takes per algorithm answered without the store: in rounds, as traffic arrives.
          const answered: Decision[] = [];
          for (let round = 0; round < 10; round++) {
            const ds = await Promise.all(
              limiters.flatMap((l) => Array.from({ length: 30 }, () => takeBoth(l, 'k'))),
            );
            answered.push(...ds);
          }
          expect(answered.filter((d) => !d.reason.startsWith('degraded'))).toEqual([]);

          if (mode === 'restart') server = await startRedis(AOF, { port: server.port, dir: server.dir });
          else server.process.kill('SIGCONT');
          // Once reconnected, whatever ioredis held has been sent (a PING queued behind it).
          await ready(client);
          await client.ping();
          await sleep(100);
          await client.ping();

          for (const l of limiters) {
            const real = await takeBoth(l, 'k');
            const expected = await l.model.take('k', { cost: 0 });
            expect({ algorithm: l.a, reason: real.reason, remaining: real.remaining }).toEqual({
              algorithm: l.a,
              reason: 'allowed',
              remaining: expected.remaining,
            });
          }
        } finally {
          client.disconnect();
        }
      });
    }
  }
});
