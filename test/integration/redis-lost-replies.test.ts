// What a connection loss can do to a ledger on Redis, each case made to happen on purpose with a
// TCP proxy (test/support/tcp-proxy.ts) or a redis-server this file starts: a reply lost after the
// script ran, and re-sent by ioredis once it reconnects, however late; registry writes lost with a
// restart; a malformed direct store call in a batch shared with valid ones. The memory store is the
// model each outcome is compared with.
import { EventEmitter } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLedger, type LedgerEntry, memoryStore, type Store } from '../../src/index.js';
import { createRedisStore, scripts } from '../../src/redis/index.js';
import { keySlot } from '../../src/redis/slot.js';
import { startRedis } from '../support/redis-servers.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (done: () => boolean) => {
  for (let i = 0; i < 500 && !done(); i++) await sleep(5);
  expect(done()).toBe(true);
};

describe('ledger on Redis across lost replies and lost connections', () => {
  const direct = new Redis(REDIS_URL);
  const prefixes: string[] = [];
  const prefix = (name: string) => {
    const p = runPrefix(`lost-${name}`);
    prefixes.push(p);
    return p;
  };
  afterAll(async () => {
    for (const p of prefixes) await cleanupPrefix(direct, p);
    direct.disconnect();
  });

  for (const [capacity, withOrder] of [
    [1, false],
    [4, false],
    [1, true],
  ] as const) {
    it(`a script re-sent after its reply was lost answers as it ran, though another process filled the window meanwhile (capacity ${capacity}${withOrder ? ', with orders' : ''})`, async () => {
      const port = Number(new URL(REDIS_URL).port || 6379);
      const proxy = await startTcpProxy(port);
      const viaProxy = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
      viaProxy.on('error', () => {});
      try {
        const p = prefix(`resend-${capacity}-${withOrder}`);
        const x = createLedger({ store: createRedisStore({ client: viaProxy, prefix: p }), capacity });
        const y = createLedger({ store: createRedisStore({ client: direct, prefix: p }), capacity });
        const model = createLedger({ store: memoryStore(), capacity });
        await viaProxy.ping();
        const mine: LedgerEntry = {
          owner: 'player',
          signature: 'A|1|final',
          deltas: { coins: 100 },
          scope: 'A',
          ...(withOrder ? { order: 1 } : {}),
        };
        proxy.loseNextReply();
        proxy.hold();
        const pending = x.apply(mine); // runs; its reply is lost; the reconnect waits
        await until(() => proxy.killed === 1);
        const others: LedgerEntry[] = Array.from({ length: capacity }, (_, i) => ({
          owner: 'player',
          signature: `B|${i}`,
          deltas: { coins: 1 },
          scope: 'B',
          ...(withOrder ? { order: 2 + i } : {}),
        }));
        for (const entry of others) await y.apply(entry); // another process, meanwhile
        proxy.release(); // ioredis reconnects and sends the script again
        const answer = await pending;
        const first = await model.apply(mine);
        for (const entry of others) await model.apply(entry);

        expect(answer.outcome).toBe('applied');
        expect(answer.seq).toBe(first.seq);
        expect(await y.balances('player')).toEqual(await model.balances('player'));
        expect(await y.totals('A')).toEqual({ coins: 100n });
        const signatures = async (ledger: typeof x) =>
          (await ledger.journal({ owner: 'player' })).map((e) => e.signature);
        expect(await signatures(y)).toEqual(await signatures(model));
      } finally {
        viaProxy.disconnect();
        await proxy.close();
      }
    });
  }

  it('a call sent again is recognised while fewer than 8 other runs wrote the owner since (the documented bound)', async () => {
    const p = prefix('runs');
    const keys = [`${p}{o}:s`, `${p}{o}:j`];
    // call, signature, capacity, order, horizon, scope, meta, n, field, amount (ledger-apply.lua)
    const entry = (call: number, signature: string) => [
      String(call),
      signature,
      1,
      '',
      0,
      '',
      '',
      1,
      'coins',
      '5',
    ];
    const apply = async (run: string, call: number, signature: string) =>
      JSON.parse(
        (await direct.eval(
          scripts.ledgerApply.text,
          2,
          ...keys,
          JSON.stringify(entry(call, signature)),
          '',
          run,
        )) as string,
      )[0] as [string, string, Record<string, string>];
    expect((await apply('mine', 1, 'a'))[0]).toBe('applied');
    for (let other = 0; other < 7; other++)
      expect((await apply(`other${other}`, 1, `b${other}`))[0]).toBe('applied');
    // 'a' left the window (capacity 1) long ago; the call number still answers for it.
    expect(await apply('mine', 1, 'a')).toEqual(['applied', '1', { coins: '40' }]);
    expect((await direct.hget(keys[0] as string, 's'))?.includes('40')).toBe(true);
    // A later call of the same run with the same signature is a new call: the window decides.
    expect((await apply('mine', 2, 'b6'))[0]).toBe('duplicate');
    expect((await apply('mine', 2, 'b6'))[0]).toBe('duplicate');
  });

  it('registry writes lost with a restart between them and the script are written again (totals and journals find the booking)', async () => {
    let server = await startRedis();
    const { port, dir } = server;
    const proxy = await startTcpProxy(port);
    const client = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
    client.on('error', () => {});
    try {
      const ledger = createLedger({ store: createRedisStore({ client, prefix: 'lost:' }), capacity: 4 });
      await client.ping();
      proxy.dropNextScript(); // the SADDs went through; the script does not
      proxy.hold();
      const pending = ledger.apply({ owner: 'p1', signature: 'A|1', deltas: { coins: 5 }, scope: 'A' });
      await until(() => proxy.killed === 1);
      await server.stop(); // no persistence: the registries are gone
      server = await startRedis([], { port, dir });
      proxy.release();
      expect((await pending).outcome).toBe('applied');
      expect(await ledger.totals('A')).toEqual({ coins: 5n });
      expect((await ledger.journal({ scope: 'A' })).map((e) => e.signature)).toEqual(['A|1']);
      expect((await ledger.journal()).map((e) => e.signature)).toEqual(['A|1']);
    } finally {
      client.disconnect();
      await proxy.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after Redis lost its data, a process that had registered an owner registers it again, even if another process wrote the owner first', async () => {
    let server = await startRedis();
    const { port, dir } = server;
    const options = { host: '127.0.0.1', port, retryStrategy: () => 20 };
    const [cx, cy] = [new Redis(options), new Redis(options)];
    for (const c of [cx, cy]) c.on('error', () => {});
    try {
      const x = createLedger({ store: createRedisStore({ client: cx, prefix: 'lost:' }), capacity: 4 });
      const y = createLedger({ store: createRedisStore({ client: cy, prefix: 'lost:' }), capacity: 4 });
      await x.apply({ owner: 'p1', signature: 'A|1', deltas: { coins: 5 }, scope: 'A' });
      await server.stop();
      server = await startRedis([], { port, dir });
      await y.apply({ owner: 'p1', signature: 'B|1', deltas: { coins: 7 }, scope: 'B' });
      await x.apply({ owner: 'p1', signature: 'A|2', deltas: { coins: 11 }, scope: 'A' });
      expect(await x.totals('A')).toEqual({ coins: 11n });
      expect((await x.journal({ scope: 'A' })).map((e) => e.signature)).toEqual(['A|2']);
      expect(await x.totals('B')).toEqual({ coins: 7n });
    } finally {
      cx.disconnect();
      cy.disconnect();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('on a cluster, a registry lost on another node than the owner is written again once the connection to that node was lost', async () => {
    const cluster: Cluster = clusterClient();
    const p = runPrefix('lost-cluster');
    try {
      const ledger = createLedger({ store: createRedisStore({ client: cluster, prefix: p }), capacity: 4 });
      await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 }, scope: 'room' });
      const registry = `${p}{default|room}:owners`;
      expect(await cluster.smembers(registry)).toEqual(['p1']);
      // That node lost the registry (a failover to a replica behind it), and the connection to it dropped.
      await cluster.del(registry);
      const address = cluster.slots[keySlot(registry)]?.[0];
      const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === address);
      expect(node).toBeDefined();
      (node as Redis).disconnect(true); // the connection to that node drops, and comes back
      await sleep(200);
      await ledger.apply({ owner: 'p1', signature: 's2', deltas: { coins: 7 }, scope: 'room' });
      expect(await ledger.totals('room')).toEqual({ coins: 12n });
      expect((await ledger.journal({ scope: 'room' })).map((e) => e.signature)).toEqual(['s1', 's2']);
    } finally {
      await cleanupPrefix(cluster, p);
      cluster.disconnect();
    }
  });

  it('a re-registration that fails after the script ran does not turn its applied answer into an error', async () => {
    const p = prefix('reregister');
    // A client whose connection drops while a script runs (the reply still arrives, as after
    // ioredis's re-send), and whose next SADD fails (reconnection attempts exhausted).
    class Flaky extends EventEmitter {
      dropDuringScript = false;
      failSadd = false;
      sadds = 0;
      async call(command: string, ...args: (string | number)[]) {
        if (command === 'SADD') {
          this.sadds++;
          if (this.failSadd) {
            this.failSadd = false;
            throw new Error('Connection is closed.');
          }
        }
        if ((command === 'EVALSHA' || command === 'EVAL') && this.dropDuringScript) {
          this.dropDuringScript = false;
          const reply = await direct.call(command, ...args);
          this.emit('close');
          this.failSadd = true;
          return reply;
        }
        return direct.call(command, ...args);
      }
    }
    const flaky = new Flaky();
    const ledger = createLedger({ store: createRedisStore({ client: flaky, prefix: p }), capacity: 1 });
    await ledger.apply({ owner: 'p', signature: 'warm', deltas: { coins: 0 }, scope: 'A' });
    flaky.dropDuringScript = true;
    const answer = await ledger.apply({
      owner: 'p',
      signature: 'settle-1',
      deltas: { coins: 100 },
      scope: 'A',
    });
    expect(answer.outcome).toBe('applied');
    expect(answer.balances).toEqual({ coins: 100n });
    // The owner's next apply registers it again before its script (the retry in the background may too).
    const sadds = flaky.sadds;
    await ledger.apply({ owner: 'p', signature: 'settle-2', deltas: { coins: 1 }, scope: 'A' });
    expect(flaky.sadds).toBeGreaterThan(sadds);
    expect(await direct.smembers(`${p}{default|A}:owners`)).toEqual(['p']);
    expect(await ledger.totals('A')).toEqual({ coins: 101n });
  });

  it('registrations that keep failing after the script ran are retried until they succeed (every 32 s at most)', async () => {
    const p = prefix('retry-forever');
    let failing = 0;
    const client = Object.assign(new EventEmitter(), {
      async call(command: string, ...args: (string | number)[]) {
        if (command === 'SADD' && failing > 0) {
          failing--;
          throw new Error('Connection is closed.');
        }
        const reply = await direct.call(command, ...args);
        if (command === 'EVALSHA' || command === 'EVAL') {
          client.emit('close'); // the connection dropped while the script ran
          // Two SADDs per attempt (the ledger's and the scope's registry): the re-registration and its
          // retries at 1, 2, 4, 8, 16, 32, 32, 32 and 32 s fail.
          failing = 20;
        }
        return reply;
      },
    });
    const ledger = createLedger({ store: createRedisStore({ client, prefix: p }), capacity: 4 });
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      const answer = await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 5 }, scope: 'A' });
      expect(answer.outcome).toBe('applied');
      for (let s = 0; s < 300 && failing > 0; s++) await vi.advanceTimersByTimeAsync(1000);
      expect(failing).toBe(0);
      await vi.advanceTimersByTimeAsync(33_000); // the retry after the last failure succeeds
    } finally {
      vi.useRealTimers();
    }
    expect(await direct.smembers(`${p}{default|A}:owners`)).toEqual(['p']);
    expect(await direct.smembers(`${p}{default}:owners`)).toEqual(['p']);
  });

  it('a direct limiter take with a fractional or out-of-range time fails alone, or is taken whole, as in memory', async () => {
    const spec = { id: 'x', algorithm: 'fixed-window', limit: 5, windowMs: 1000, param: 0 } as const;
    const p = prefix('limiter-now');
    for (const store of [memoryStore(), createRedisStore({ client: direct, prefix: p })] as Store[]) {
      const take = (key: string, now: number) =>
        (store.limiterTake as NonNullable<Store['limiterTake']>)({
          namespace: '|l:direct',
          limits: [{ spec, subject: key }],
          cost: 1,
          now,
        });
      const answers = await Promise.allSettled([
        take('a', 1_000_000),
        take('b', 1_000_000.5),
        take('c', 2 ** 52),
        take('d', 1_000_000),
      ]);
      expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(((answers[2] as PromiseRejectedResult).reason as { code: string }).code).toBe(
        'ERR_INVALID_ARGUMENT',
      );
      expect((answers[1] as PromiseFulfilledResult<{ now: number }>).value.now).toBe(1_000_000);
    }
  });

  it('a direct limiter take with a malformed limit spec fails alone and changes nothing, as in memory', async () => {
    const good = { id: 'x', algorithm: 'gcra', limit: 5, windowMs: 1000, param: 5 } as const;
    const bad = [
      { ...good, limit: 2.5 }, // the script writes whole numbers: a fraction would be cut off
      { ...good, windowMs: Number.NaN },
      { ...good, param: 0 }, // a GCRA burst of 0
      { ...good, algorithm: 'leaky-bucket' },
      { ...good, algorithm: 'sliding-window', param: 300 }, // a bucket that does not divide the window
      { ...good, limit: 2 ** 40, windowMs: 2 ** 20 }, // limit x window beyond 2^53
    ];
    const p = prefix('limiter-spec');
    for (const store of [memoryStore(), createRedisStore({ client: direct, prefix: p })] as Store[]) {
      const take = (key: string, spec: unknown) =>
        (store.limiterTake as NonNullable<Store['limiterTake']>)({
          namespace: '|l:direct',
          limits: [{ spec: spec as typeof good, subject: key }],
          cost: 1,
          now: 1_000_000,
        });
      for (const spec of bad) {
        const answers = await Promise.allSettled([take('a', good), take('bad', spec), take('b', good)]);
        expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        const reason = (answers[1] as PromiseRejectedResult).reason as { code: string; message: string };
        expect(reason.code).toBe('ERR_INVALID_ARGUMENT');
        expect(reason.message).toContain('limits[0].spec.');
      }
      // Nothing was written for the refused takes: their key is still empty.
      expect((await take('bad', good)).verdicts[0]?.remaining).toBe(4);
    }
  });

  it('a rolling deploy: processes of the previous version (0.1.0 script) and of this one share owners without a repeat applied twice', async () => {
    // The script of the version before the runs list, as it ran (test/integration/fixtures).
    const previous = readFileSync(new URL('./fixtures/ledger-apply-0.1.0.lua', import.meta.url), 'utf8');
    const p = prefix('rolling');
    const keys = [`${p}{default:player}:s`, `${p}{default:player}:j`];
    const old = async (signature: string, coins: number) => {
      // signature, capacity, order, horizon, scope, meta, n, field, amount (its entry layout)
      const entry = [signature, 2, '', 1, 'A', '', 1, 'coins', String(coins)];
      const reply = (await direct.eval(previous, 2, ...keys, JSON.stringify(entry), '')) as string;
      return (JSON.parse(reply) as [string][])[0]?.[0];
    };
    const ledger = createLedger({ store: createRedisStore({ client: direct, prefix: p }), capacity: 2 });
    const model = createLedger({ store: memoryStore(), capacity: 2 });
    const apply = (signature: string, coins: number) =>
      ledger.apply({ owner: 'player', signature, deltas: { coins }, scope: 'A' }).then((r) => r.outcome);
    const steps: [string, string, number][] = [
      ['new', 'a', 100],
      ['old', 'b', 10],
      ['new', 'b', 10],
      ['old', 'a', 100],
      ['old', 'c', 1],
      ['new', 'c', 1],
      ['new', 'd', 5],
      ['old', 'd', 5],
    ];
    for (const [side, signature, coins] of steps) {
      const expected = (await model.apply({ owner: 'player', signature, deltas: { coins }, scope: 'A' }))
        .outcome;
      expect(side === 'new' ? await apply(signature, coins) : await old(signature, coins)).toBe(expected);
    }
    expect(await ledger.balances('player')).toEqual(await model.balances('player'));
    expect((await ledger.window('player')).signatures).toEqual((await model.window('player')).signatures);
  });

  it('a malformed direct store call fails alone: the valid calls batched with it are applied, and it changes nothing', async () => {
    // The memory store decides each call alone (nothing is batched), and what it cannot take it refuses
    // too; the Redis store checks every field before a call joins a batch.
    const stores: [Store, number][] = [
      [memoryStore(), 4],
      [createRedisStore({ client: direct, prefix: prefix('bad') }), 8],
    ];
    for (const [store, checked] of stores) {
      const valid = (owner: string) => ({
        ledger: 'default',
        capacity: 1,
        horizon: true,
        owner,
        signature: 's',
        deltas: [['coins', 5n]] as const,
      });
      const bad = [
        // A field twice would be booked twice: refused, among a few fields and among many.
        {
          ...valid('carol'),
          deltas: [
            ['coins', 1n],
            ['gems', 1n],
            ['coins', 2n],
          ],
        },
        { ...valid('carol'), deltas: [...Array.from({ length: 20 }, (_, i) => [`f${i}`, 1n]), ['f3', 1n]] },
        { ...valid('carol'), capacity: undefined },
        { ...valid('carol'), order: 'abc' },
        { ...valid('carol'), scope: '' },
        { ...valid('carol'), meta: { n: 1n } },
        { ...valid('carol'), owner: '\ud800' },
        { ...valid('carol'), deltas: Array.from({ length: 1001 }, (_, i) => [`f${i}`, 1n]) },
      ];
      for (const command of bad.slice(0, checked)) {
        const answers = await Promise.allSettled([
          store.ledgerApply(valid('alice')),
          store.ledgerApply(command as never),
          store.ledgerApply(valid('bob')),
        ]);
        expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect(((answers[1] as PromiseRejectedResult).reason as { code: string }).code).toBe(
          'ERR_INVALID_ARGUMENT',
        );
      }
      expect(await store.ledgerBalances('default', 'alice')).toEqual({ coins: 5n });
      expect(await store.ledgerBalances('default', 'bob')).toEqual({ coins: 5n });
      expect(await store.ledgerBalances('default', 'carol')).toEqual({});
    }
  });
});
