// Takes answered without Redis (degraded-deny, -allow, -local) while the server is down or
// stalled must never be charged when it comes back: not from ioredis's offline queue, not from
// its re-sent unfulfilled commands, not from commands already in the socket when the limiter
// stopped waiting. Each case runs every algorithm on a redis-server this file starts (and kills,
// restarts with its AOF, or stops with SIGSTOP), and compares each key's remaining with a model
// limiter on the memory store fed only the takes Redis answered.
//
// docs/limits.md names the one charge a degraded answer may still carry: a take Redis ran before
// its deadline whose reply came too late (lost, or, on a busy machine, read after the limiter's
// timer fired). While the server is down or stalled no take can run before its deadline, so the
// takes answered then are never charged; a degraded answer while the server was up (a 50 ms
// timeout missed under load) may be. Each such answer widens the bound by one, never more: on an
// idle machine there are none and the check is exact.
import { rmSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import {
  createLimiter,
  type Decision,
  type DegradedPolicy,
  type Limiter,
  memoryStore,
} from '../../src/index.js';
import { createRedisStore, scripts } from '../../src/redis/index.js';
import { type StartedRedis, startRedis } from '../support/redis-servers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// A PING answered on `client`: every command it sent before has run. With a commandTimeout a
// PING can time out on a busy machine (it still ran): asked again until one is answered.
const settled = async (client: Redis) => {
  for (let i = 0; ; i++) {
    try {
      await client.ping();
      return;
    } catch (err) {
      if (i >= 200) throw err;
      await sleep(25);
    }
  }
};
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
    await server?.remove();
  });

  for (const mode of ['restart', 'stall'] as const) {
    for (const [label, options] of CLIENTS) {
      it(`${mode}, ${label}`, { timeout: 30_000 }, async () => {
        const client = new Redis({ port: server.port, retryStrategy: () => 100, ...options });
        const readers: Redis[] = [];
        client.on('error', () => {});
        try {
          await ready(client);
          const clock = new FakeClock(1_000_000);
          const store = createRedisStore({ client, prefix: `outage:${mode}:${label}:` });
          const model = memoryStore({ clock });
          const options = (algorithm: (typeof ALGORITHMS)[number]) =>
            ({ name: algorithm, algorithm, limit: 100, window: '1h', clock, blockCache: false }) as const;
          const make = (algorithm: (typeof ALGORITHMS)[number], i: number, onStore: boolean): Limiter =>
            createLimiter({
              ...options(algorithm),
              store: onStore ? store : model,
              degraded: POLICIES[i % POLICIES.length] as DegradedPolicy,
              timeout: '50ms',
            });
          const limiters = ALGORITHMS.map((a, i) => ({
            a,
            real: make(a, i, true),
            model: make(a, i, false),
            // Degraded answers while the server was up: each may have been charged (see above).
            mayCount: 0,
          }));
          let serverUp = true;
          // The model sees exactly the takes Redis answered.
          const takeBoth = async (l: (typeof limiters)[number], key: string): Promise<Decision> => {
            const d = await l.real.take(key);
            if (!d.reason.startsWith('degraded')) await l.model.take(key);
            else if (serverUp) l.mayCount++;
            return d;
          };
          for (const l of limiters) for (let i = 0; i < 10; i++) await takeBoth(l, 'k');
          serverUp = false;

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
          await settled(client);
          await sleep(100);
          await settled(client);
          // Reads what Redis holds, however long it takes: a client of its own with no
          // commandTimeout, a limiter with no timeout and no degraded answer.
          const reader = new Redis({ port: server.port });
          readers.push(reader);
          const readStore = createRedisStore({ client: reader, prefix: `outage:${mode}:${label}:` });

          for (const l of limiters) {
            const probe = createLimiter({ ...options(l.a), store: readStore });
            const held = (await probe.take('k', { cost: 0 })).remaining;
            const answered = (await l.model.take('k', { cost: 0 })).remaining;
            // Exact on an idle machine (mayCount 0): no take answered in the outage counts, and
            // of those answered degraded while the server was up, at most all.
            expect(held, `${l.a}: Redis holds every take it answered`).toBeLessThanOrEqual(answered);
            expect(held, `${l.a}: charged beyond the ${l.mayCount} late replies`).toBeGreaterThanOrEqual(
              answered - l.mayCount,
            );
          }
        } finally {
          client.disconnect();
          for (const reader of readers) reader.disconnect();
        }
      });
    }
  }

  it("stall, degraded 'throw' and a commandTimeout: the takes that threw are not charged either", async () => {
    // No limiter timeout: the client's commandTimeout is the fence (it rejects the command and
    // leaves it in the socket, which the stalled server reads on waking).
    const client = new Redis({ port: server.port, retryStrategy: () => 100, commandTimeout: 40 });
    client.on('error', () => {});
    try {
      await ready(client);
      const clock = new FakeClock(1_000_000);
      const store = createRedisStore({ client, prefix: 'outage:throw:' });
      const options = { algorithm: 'gcra', limit: 100, window: '1h', clock, blockCache: false } as const;
      const limiter = createLimiter({ store, ...options });
      // Before the stall a take may still miss the 40 ms on a busy machine: it threw, and Redis may
      // have run it in time (the late reply of docs/limits.md), so it may count.
      let answered = 0;
      let mayCount = 0;
      for (let i = 0; i < 10; i++) {
        await limiter.take('k').then(
          () => answered++,
          () => mayCount++,
        );
      }
      server.process.kill('SIGSTOP');
      const failed = await Promise.allSettled(Array.from({ length: 100 }, () => limiter.take('k')));
      expect(failed.every((r) => r.status === 'rejected')).toBe(true);
      server.process.kill('SIGCONT');
      await sleep(100);
      await settled(client);
      // Read through a client of its own with no timeout: what Redis holds, however slow.
      const reader = new Redis({ port: server.port });
      try {
        const probe = createLimiter({
          store: createRedisStore({ client: reader, prefix: 'outage:throw:' }),
          ...options,
        });
        const held = (await probe.take('k', { cost: 0 })).remaining;
        expect(held, 'Redis holds every take it answered').toBeLessThanOrEqual(100 - answered);
        expect(held, `charged beyond the ${mayCount} late replies`).toBeGreaterThanOrEqual(
          100 - answered - mayCount,
        );
      } finally {
        reader.disconnect();
      }
    } finally {
      client.disconnect();
    }
  });
});

describe('a client that rejects a command and sends it anyway', () => {
  it('the failure is not reported before the fence, so no charge lands after the degraded answer', async () => {
    const server = await startRedis();
    const real = new Redis({ port: server.port });
    try {
      await ready(real);
      // Loaded, so each late EVALSHA runs (a fresh server would answer NOSCRIPT and charge nothing).
      await real.call('SCRIPT', 'LOAD', scripts.limiterTake.text);
      // Rejects each script call at once, as a dropped connection would, and sends it 20 ms
      // later, as a client re-sending unfulfilled commands would: within the limiter's 60 ms.
      const late: Promise<unknown>[] = [];
      const flaky = {
        call(command: string, ...args: (string | number)[]): Promise<unknown> {
          if (!command.startsWith('EVAL')) return real.call(command, ...args);
          late.push(sleep(20).then(() => real.call(command, ...args)));
          return Promise.reject(new Error('read ECONNRESET'));
        },
      };
      const clock = new FakeClock(1_000_000);
      const options = {
        algorithm: 'fixed-window',
        limit: 100,
        window: '1h',
        clock,
        blockCache: false,
      } as const;
      const limiter = createLimiter({
        ...options,
        store: createRedisStore({ client: flaky, prefix: 'flaky:' }),
        degraded: 'deny',
        timeout: '60ms',
      });
      const direct = createLimiter({
        ...options,
        store: createRedisStore({ client: real, prefix: 'flaky:' }),
      });
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(Array.from({ length: 10 }, () => limiter.take('k')));
        expect(answers.map((d) => d.reason)).toEqual(Array(10).fill('degraded-deny'));
        // What the store holds when the callers were answered is all it will ever hold of them.
        const atAnswer = (await direct.take('k', { cost: 0 })).remaining;
        await Promise.allSettled(late);
        expect((await direct.take('k', { cost: 0 })).remaining).toBe(atAnswer);
      }
    } finally {
      real.disconnect();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });
});
