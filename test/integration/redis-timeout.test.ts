// Every store call has a bounded wait (createRedisStore `timeout`, default 10 s), and its failure
// says what it did: `not-applied` when the command was never sent (the client never connected,
// or was closed first), `unknown` when it was sent and no reply came (it may have run, or run
// later). Against a dead port, a server that accepts and never answers, and a proxy that delays.
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createIdempotency, createLedger, createLimiter, type Store } from '../../src/index.js';
import { boundedClient } from '../../src/redis/bounded-client.js';
import { createRedisStore } from '../../src/redis/index.js';
import { freePort, startRedis, startTcpProxy } from '../../src/testing/index.js';
import { quietClients } from '../support/quiet-clients.js';
import { silentServer } from '../support/silent-server.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const prefix = runPrefix('timeout');

/** What a store call's rejection says, and how long it took (ms). */
async function failure(
  call: () => Promise<unknown>,
): Promise<{ code: unknown; outcome: unknown; retriable: unknown; ms: number }> {
  const start = performance.now();
  const err = (await call().then(
    () => undefined,
    (e: unknown) => e,
  )) as { code?: unknown; outcome?: unknown; retriable?: unknown } | undefined;
  return { code: err?.code, outcome: err?.outcome, retriable: err?.retriable, ms: performance.now() - start };
}

/** The ledger and a 'throw'-mode limiter (the default policy) on `store`. */
function capabilities(store: Store) {
  return {
    ledger: createLedger({ store, capacity: 4 }),
    limiter: createLimiter({ store, algorithm: 'fixed-window', limit: 10, window: '1m', blockCache: false }),
  };
}

describe('a bounded wait on every store call', () => {
  const { client, disconnectAll } = quietClients();
  afterAll(() => {
    disconnectAll();
  });

  for (const lazyConnect of [false, true]) {
    it(`a dead port (lazyConnect: ${lazyConnect}): not-applied, retriable, within the timeout`, async () => {
      const port = await freePort();
      const store = createRedisStore({ client: client({ port, lazyConnect }), prefix, timeout: '300ms' });
      const { ledger, limiter } = capabilities(store);
      const results = [
        await failure(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })),
        await failure(() => limiter.take('k')),
        await failure(() => ledger.balances('p')),
      ];
      for (const r of results) {
        expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
        // The wait is 300 ms; the bound is generous for a loaded machine, and far below ioredis's
        // own ~73 s for a client that never connects.
        expect(r.ms).toBeLessThan(5_000);
      }
    });
  }

  it('a dead port with the default timeout: rejected after about 10 s, not-applied', async () => {
    const port = await freePort();
    const store = createRedisStore({ client: client({ port }), prefix });
    const { ledger, limiter } = capabilities(store);
    const idem = createIdempotency({ store });
    const results = await Promise.all([
      failure(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })),
      failure(() => limiter.take('k')),
      failure(() => idem.run({ key: 'k', payload: 1 }, () => 'done')),
    ]);
    for (const r of results) {
      expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
      expect(r.ms).toBeGreaterThanOrEqual(9_900);
      expect(r.ms).toBeLessThan(30_000);
    }
  }, 40_000);

  it("a client's maxRetriesPerRequest still holds: a dead port fails after that many attempts, not-applied", async () => {
    const port = await freePort();
    const { ledger } = capabilities(
      createRedisStore({ client: client({ port, maxRetriesPerRequest: 0 }), prefix }),
    );
    const r = await failure(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } }));
    expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
    expect(r.ms).toBeLessThan(5_000); // the store's own wait is 10 s
  });

  it('a client that gave up connecting (retryStrategy: null) before ever connecting: not-applied', async () => {
    const port = await freePort();
    const c = client({ port, retryStrategy: () => null });
    const { ledger, limiter } = capabilities(createRedisStore({ client: c, prefix }));
    const apply = failure(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } }));
    const take = failure(() => limiter.take('k'));
    for (const r of await Promise.all([apply, take])) {
      expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied' });
      expect(r.ms).toBeLessThan(5_000);
    }
  });

  it('a server that accepts and never answers: not-applied while the client is not ready, unknown once a command was written', async () => {
    const silent = await silentServer();
    try {
      // The ready check (INFO) is never answered: the client never becomes ready, nothing is sent.
      const unready = createRedisStore({ client: client({ port: silent.port }), prefix, timeout: '300ms' });
      // No ready check and no CLIENT SETINFO (ioredis waits for its answer): ready once connected,
      // so a command is written, and may have run.
      const ready = client({ port: silent.port, enableReadyCheck: false, disableClientInfo: true });
      for (let i = 0; i < 500 && ready.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(ready.status).toBe('ready');
      const written = createRedisStore({ client: ready, prefix, timeout: '300ms' });
      for (const [store, outcome] of [
        [unready, 'not-applied'],
        [written, 'unknown'],
      ] as const) {
        // An idempotency record is one script: written, it may have run.
        const idem = createIdempotency({ store });
        const run = await failure(() => idem.run({ key: 'k', payload: 1 }, () => 'done'));
        expect(run).toMatchObject({ code: 'ERR_STORE', outcome, retriable: true });
        expect(run.ms).toBeLessThan(5_000);
        // An apply registers its owner (a SADD) before its script: that went unanswered, so the
        // script was never sent. A take reads TIME first: likewise.
        const { ledger, limiter } = capabilities(store);
        const apply = await failure(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } }));
        const take = await failure(() => limiter.take('k'));
        for (const r of [apply, take]) {
          expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
          expect(r.ms).toBeLessThan(5_000);
        }
      }
    } finally {
      await silent.close();
    }
  });

  it('a reply later than the timeout: unknown, and the apply did run (late)', async () => {
    const server = await startRedis();
    const proxy = await startTcpProxy(server.port);
    const c = client({ port: proxy.port });
    try {
      const { ledger } = capabilities(createRedisStore({ client: c, prefix, timeout: '200ms' }));
      expect((await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 1 } })).outcome).toBe(
        'applied',
      );
      proxy.latency(1_000);
      const r = await failure(() => ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 1 } }));
      expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'unknown', retriable: true });
      proxy.latency(0);
      // It reached Redis after its caller was told: `unknown` was the truth.
      let balances: unknown;
      for (let i = 0; i < 300; i++) {
        balances = await ledger.balances('p').catch(() => undefined);
        if ((balances as { coins?: bigint } | undefined)?.coins === 2n) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(balances).toEqual({ coins: 2n });
    } finally {
      c.disconnect();
      await proxy.close();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });

  it('a take while the connection is known lost is refused at once, not-applied (it was never sent)', async () => {
    const server = await startRedis();
    const proxy = await startTcpProxy(server.port);
    const c = client({ port: proxy.port, retryStrategy: () => 50 });
    try {
      const { limiter } = capabilities(createRedisStore({ client: c, prefix }));
      // Seen ready by a take: the store then knows a connection that is not ready was lost.
      for (let i = 0; i < 500 && c.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 10));
      expect((await limiter.take('k')).allowed).toBe(true);
      proxy.cut();
      for (let i = 0; i < 500 && c.status === 'ready'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(c.status).not.toBe('ready');
      const r = await failure(() => limiter.take('k'));
      expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
      expect(r.ms).toBeLessThan(5_000);
    } finally {
      c.disconnect();
      await proxy.close();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });

  it('a healthy server answers as it would without a timeout', async () => {
    const c = client({ host: new URL(REDIS_URL).hostname, port: Number(new URL(REDIS_URL).port || 6379) });
    try {
      const { ledger, limiter } = capabilities(createRedisStore({ client: c, prefix, timeout: '5s' }));
      expect((await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })).outcome).toBe(
        'applied',
      );
      expect((await limiter.take('k')).allowed).toBe(true);
    } finally {
      await cleanupPrefix(c, prefix);
    }
  });
});

describe('a bounded wait with `durability` (the script and its WAIT pipelined)', () => {
  const DURABLE = { replicas: 1, timeout: '100ms' } as const;
  const { client, disconnectAll } = quietClients();
  afterAll(() => {
    disconnectAll();
  });

  /** `call`'s failure, or 'pending' when it has not settled within 10 s (no bound at all). */
  async function bounded(call: () => Promise<unknown>) {
    let timer: NodeJS.Timeout | undefined;
    const pending = new Promise<'pending'>((resolve) => {
      timer = setTimeout(() => resolve('pending'), 10_000);
    });
    try {
      return await Promise.race([failure(call), pending]);
    } finally {
      clearTimeout(timer);
    }
  }

  it('a stopped server: a durable apply, resolve and record fail within the timeout (plus the wait), unknown', async () => {
    const server = await startRedis();
    const c = client({ port: server.port });
    try {
      expect(await c.ping()).toBe('PONG');
      const store = createRedisStore({ client: c, prefix, timeout: '500ms', durability: DURABLE });
      const ledger = createLedger({ store, capacity: 4 });
      const idem = createIdempotency({ store });
      // Registered while the server runs, so the apply's only command is the pipelined script.
      await ledger.apply({ owner: 'p', signature: 'first', deltas: { coins: 1 } }).catch(() => {});
      await ledger.apply({ owner: 'q', signature: 'first', deltas: { coins: 1 } }).catch(() => {});
      process.kill(server.process.pid as number, 'SIGSTOP');
      const results = await Promise.all([
        bounded(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })),
        bounded(() => ledger.resolve({ owner: 'q', signature: 's', deltas: { coins: 1 } })),
        bounded(() => idem.run({ key: 'k', payload: 1 }, () => 'done')),
      ]);
      for (const r of results) {
        expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'unknown', retriable: true });
        expect((r as { ms: number }).ms).toBeLessThan(8_000);
      }
    } finally {
      process.kill(server.process.pid as number, 'SIGCONT');
      c.disconnect();
      await server.remove();
    }
  }, 30_000);

  it('a dead port: a durable record, apply and resolve are not-applied (never sent), within the timeout', async () => {
    const port = await freePort();
    const store = createRedisStore({
      client: client({ port }),
      prefix,
      timeout: '300ms',
      durability: DURABLE,
    });
    const ledger = createLedger({ store, capacity: 4 });
    const idem = createIdempotency({ store });
    const results = [
      await bounded(() => idem.run({ key: 'k', payload: 1 }, () => 'done')),
      await bounded(() => ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })),
      await bounded(() => ledger.resolve({ owner: 'p', signature: 's', deltas: { coins: 1 } })),
    ];
    for (const r of results) {
      expect(r).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
      // The wait is 300 ms; ioredis's own offline queue failed it after ~1 s of reconnections.
      expect((r as { ms: number }).ms).toBeLessThan(5_000);
    }
  });
});

describe('boundedClient: a command the client throws on synchronously', () => {
  /** Timers this process has pending (a timer left running keeps a call's wait alive). */
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it('given at once: rejected, its timer stopped', async () => {
    const c = new Redis(REDIS_URL);
    try {
      expect(await c.ping()).toBe('PONG');
      const redis = boundedClient(c, 600_000);
      const before = timers();
      // ioredis throws from call() itself when the command is not a string.
      const err = await redis.call(undefined as unknown as string).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect(timers()).toBe(before);
    } finally {
      c.disconnect();
    }
  });

  it('held until ready: rejected, and the commands held with it are sent', async () => {
    const c = new Redis(REDIS_URL, { lazyConnect: true });
    try {
      const redis = boundedClient(c, 10_000);
      const thrown = redis.call(undefined as unknown as string).then(
        () => 'answered',
        (e: unknown) => e,
      );
      const ping = redis.call('PING').catch((e: unknown) => e);
      expect(await thrown).toBeInstanceOf(Error);
      expect(await ping).toBe('PONG');
    } finally {
      c.disconnect();
    }
  });
});
