// The `durability` option (docs/redis.md, *Failover and durability*) on a master and a replica
// of this test's own: a write is answered once the replica has it; when the replica cannot
// confirm in time, the caller is told (ERR_STORE `unknown`, cause ERR_NOT_REPLICATED, or the
// `onShort` report), and the same call sent again once the replica is back is answered as it was.
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotency, createLedger, isOnceflowError, type StoreError } from '../../src/index.js';
import {
  createRedisStore,
  type DurabilityOptions,
  type NotReplicatedError,
  type ReplicationShortfall,
} from '../../src/redis/index.js';
import { ownerKeys } from '../../src/redis/keys.js';
import { createStreamProducer } from '../../src/streams/index.js';
import { type StartedRedis, startRedis } from '../support/redis-servers.js';
import { coded, rejected, thrown } from '../support/thrown.js';

// 2 s: a replica on loopback confirms in well under 1 ms; the margin is for a loaded machine.
// Only the shortfall cases wait it out (the replica is gone there).
const DURABLE: DurabilityOptions = { replicas: 1, timeout: '2s' };
const SHORT: DurabilityOptions = { replicas: 1, timeout: '100ms' };

let master: StartedRedis;
let replica: StartedRedis | undefined;
let client: Redis;
let waitaof: boolean;

async function startReplica(): Promise<StartedRedis> {
  const started = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
  const probe = new Redis({ port: started.port });
  try {
    for (let i = 0; i < 600; i++) {
      const info = await probe.info('replication');
      if (info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0'))
        return started;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the replica never synced');
  } finally {
    probe.disconnect();
  }
}

async function stopReplica(): Promise<void> {
  if (replica === undefined) return;
  await replica.stop();
  rmSync(replica.dir, { recursive: true, force: true });
  replica = undefined;
  // The master notices the replica's connection closed at once (a killed process): no stale count.
  for (let i = 0; i < 200 && (await client.info('replication')).includes('connected_slaves:1'); i++)
    await new Promise((r) => setTimeout(r, 50));
}

function notReplicated(err: unknown): NotReplicatedError {
  expect(coded(err).code).toBe('ERR_STORE');
  const cause = (err as StoreError).cause;
  expect(isOnceflowError(cause, 'ERR_NOT_REPLICATED')).toBe(true);
  return cause as NotReplicatedError;
}

beforeAll(async () => {
  // AOF on: WAITAOF (Redis >= 7.2) needs it on the master for `aof: true`.
  // No diskless-sync delay: a replica (re)attaching syncs at once, not 5 s later.
  master = await startRedis(['--appendonly', 'yes', '--repl-diskless-sync-delay', '0']);
  client = new Redis({ port: master.port });
  const version = /redis_version:(\d+)\.(\d+)/.exec(await client.info('server'));
  waitaof = Number(version?.[1]) > 7 || (Number(version?.[1]) === 7 && Number(version?.[2]) >= 2);
  replica = await startReplica();
});

afterAll(async () => {
  try {
    await stopReplica();
  } finally {
    client.disconnect();
    await master.stop();
    rmSync(master.dir, { recursive: true, force: true });
  }
});

describe('createRedisStore({ durability }): options', () => {
  it('refuses a malformed option by name, changing nothing', () => {
    const make = (durability: unknown) => () =>
      createRedisStore({ client, durability: durability as DurabilityOptions });
    expect(coded(thrown(make({ replicas: 1 }))).message).toMatch(/`durability.timeout`/);
    expect(coded(thrown(make({ replicas: 1, timeout: '1s', onShrot: 'throw' }))).message).toMatch(
      /`durability.onShrot`.*did you mean `onShort`/,
    );
    expect(coded(thrown(make({ replicas: 0, timeout: '1s' }))).message).toMatch(/`durability.replicas`/);
    expect(coded(thrown(make({ replicas: 1.5, timeout: '1s' }))).message).toMatch(/`durability.replicas`/);
    expect(coded(thrown(make({ replicas: 1, timeout: 0 }))).message).toMatch(/`durability.timeout`/);
    expect(coded(thrown(make({ replicas: 1, timeout: '30d' }))).message).toMatch(/`durability.timeout`/);
    expect(coded(thrown(make({ replicas: 1, timeout: '1s', onShort: 'log' }))).message).toMatch(
      /`durability.onShort`/,
    );
    expect(coded(thrown(make({ replicas: 1, timeout: '1s', aof: 'yes' }))).message).toMatch(
      /`durability.aof`/,
    );
    expect(coded(thrown(make('1s'))).code).toBe('ERR_INVALID_OPTION');
    // A client that cannot pipeline cannot send WAIT with the write on one connection.
    const bare = { call: (...args: (string | number)[]) => client.call(...(args as [string])) };
    expect(coded(thrown(() => createRedisStore({ client: bare, durability: DURABLE }))).message).toMatch(
      /`client`/,
    );
    // 0 replicas is allowed with `aof` (the master's own fsync).
    expect(() =>
      createRedisStore({ client, durability: { replicas: 0, timeout: '1s', aof: true } }),
    ).not.toThrow();
    expect(
      coded(
        thrown(() =>
          createStreamProducer({ client, stream: 'x', durability: { replicas: 1 } as DurabilityOptions }),
        ),
      ).message,
    ).toMatch(/`durability.timeout`/);
  });
});

describe('durability with the replica up', () => {
  it('answers an apply, a resolve, a record and a publish once the replica has them', async () => {
    const prefix = `dur-up-${Date.now()}:`;
    const store = createRedisStore({ client, prefix, durability: DURABLE });
    const ledger = createLedger({ store, capacity: 4 });
    const onReplica = new Redis({ port: (replica as StartedRedis).port });
    try {
      // Many at once: one batch, one WAIT.
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          ledger.apply({ owner: `p${i}`, signature: 's1', deltas: { coins: 5 } }),
        ),
      );
      expect(results.every((r) => r.outcome === 'applied')).toBe(true);
      // Read on the replica right after the answer: no wait, it is there.
      for (let i = 0; i < 20; i++) {
        expect(await onReplica.exists(ownerKeys(prefix, 'default', `p${i}`)[0])).toBe(1);
      }
      expect((await ledger.resolve({ owner: 'q1', signature: 's1', deltas: { coins: 1 } })).outcome).toBe(
        'applied',
      );
      expect(await onReplica.exists(ownerKeys(prefix, 'default', 'q1')[0])).toBe(1);

      const idem = createIdempotency({ store, name: 'dur' });
      expect(await idem.run({ key: 'k1' }, () => 42)).toEqual({ outcome: 'executed', value: 42 });
      expect((await onReplica.keys(`${prefix}{idem:*`)).length).toBe(1);

      const stream = `${prefix}{events}`;
      const producer = createStreamProducer({ client, stream, durability: DURABLE });
      const id = await producer.publish({ n: 1 }, { id: 'e1' });
      expect(await onReplica.xrange(stream, id, id)).toHaveLength(1);
      await producer.close();

      // `aof: true`: WAITAOF where the server has it, else WAIT alone; answered either way.
      const aofLedger = createLedger({
        store: createRedisStore({ client, prefix, durability: { ...DURABLE, aof: true } }),
        capacity: 4,
      });
      expect((await aofLedger.apply({ owner: 'a1', signature: 's1', deltas: { coins: 1 } })).outcome).toBe(
        'applied',
      );
      expect(await onReplica.exists(ownerKeys(prefix, 'default', 'a1')[0])).toBe(1);

      // The marker each wait writes leaves nothing behind.
      expect(await client.keys('*onceflow-wait*')).toEqual([]);
    } finally {
      onReplica.disconnect();
    }
  });
});

describe('durability with the replica gone', () => {
  it('rejects with ERR_STORE unknown (cause ERR_NOT_REPLICATED); the same entry once it is back is a duplicate, booked once', async () => {
    const prefix = `dur-down-${Date.now()}:`;
    const ledger = createLedger({
      store: createRedisStore({ client, prefix, durability: SHORT }),
      capacity: 4,
    });
    const entry = { owner: 'p1', signature: 'round-1', deltas: { coins: 5 } };
    await stopReplica();
    try {
      const err = await rejected(ledger.apply(entry));
      const cause = notReplicated(err);
      expect([(err as StoreError).outcome, (err as StoreError).retriable]).toEqual(['unknown', true]);
      expect(cause.shortfall).toMatchObject({
        operation: 'ledgerApply',
        wanted: 1,
        replicas: 0,
        timeoutMs: 100,
      });
      // The master has it; a failover now could lose it. Retried while the replica is still away:
      // the same answer.
      notReplicated(await rejected(ledger.apply(entry)));

      // Reported instead of thrown: the call answers, the report says what the wait found.
      const reports: ReplicationShortfall[] = [];
      const reporting = createLedger({
        store: createRedisStore({
          client,
          prefix,
          durability: { ...SHORT, onShort: (s) => reports.push(s) },
        }),
        capacity: 4,
      });
      expect((await reporting.apply({ owner: 'p2', signature: 's', deltas: { coins: 1 } })).outcome).toBe(
        'applied',
      );
      expect(reports).toMatchObject([{ operation: 'ledgerApply', calls: 1, wanted: 1, replicas: 0 }]);

      // `aof: true` on a server without WAITAOF falls back to WAIT (the report says which ran).
      const aofReports: ReplicationShortfall[] = [];
      const aof = createLedger({
        store: createRedisStore({
          client,
          prefix,
          durability: { ...SHORT, aof: true, onShort: (s) => aofReports.push(s) },
        }),
        capacity: 4,
      });
      await aof.apply({ owner: 'p3', signature: 's', deltas: { coins: 1 } });
      expect(aofReports).toMatchObject([{ aof: waitaof, replicas: 0 }]);

      const idem = createIdempotency({
        store: createRedisStore({ client, prefix, durability: SHORT }),
        name: 'dur',
      });
      notReplicated(await rejected(idem.run({ key: 'k1' }, () => 1)));
      const producer = createStreamProducer({
        client,
        stream: `${prefix}{events}`,
        durability: SHORT,
        retry: { attempts: 1 },
        deadLetter: false,
      });
      const failed = await rejected(producer.publish({ n: 1 }, { id: 'e1' }));
      expect(coded(failed).code).toBe('ERR_PUBLISH_FAILED');
      expect(isOnceflowError((failed as Error).cause, 'ERR_NOT_REPLICATED')).toBe(true);
      await producer.close();
    } finally {
      replica = await startReplica();
    }
    // Back: the retry of the same entry is answered from the window, and now confirmed. Retried
    // with a 2 s wait: 100 ms is the shortfall case above, and a loaded machine's replica may
    // confirm later than that even when it is up.
    const back = createLedger({
      store: createRedisStore({ client, prefix, durability: DURABLE }),
      capacity: 4,
    });
    expect((await back.apply(entry)).outcome).toBe('duplicate');
    expect(await back.balances('p1')).toEqual({ coins: 5n });
    // The begin that fell short released the lease it took (its body never ran): the retry runs
    // it now, instead of answering `in-progress` until the lease runs out.
    const again = createIdempotency({
      store: createRedisStore({ client, prefix, durability: DURABLE }),
      name: 'dur',
    });
    expect(await again.run({ key: 'k1' }, () => 2)).toEqual({ outcome: 'executed', value: 2 });
  });
});

describe('durability: a wait that fails after its script ran', () => {
  it('is a shortfall (unknown, retriable, cause ERR_NOT_REPLICATED with the reply), never the reply alone', async () => {
    const prefix = `dur-nowait-${Date.now()}:`;
    // A user the master refuses WAIT to: the script and the marker run, the wait is an error reply.
    const user = `onceflow-nowait-${Date.now()}`;
    await client.call('ACL', 'SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-wait');
    const limited = new Redis({ port: master.port, username: user });
    try {
      const ledger = createLedger({
        store: createRedisStore({ client: limited, prefix, durability: DURABLE }),
        capacity: 4,
      });
      const entry = { owner: 'p1', signature: 'round-1', deltas: { coins: 5 } };
      const err = await rejected(ledger.apply(entry));
      const cause = notReplicated(err);
      expect([(err as StoreError).outcome, (err as StoreError).retriable]).toEqual(['unknown', true]);
      expect(cause.shortfall).toMatchObject({ operation: 'ledgerApply', replicas: 0 });
      expect(String((cause.cause as Error).message)).toMatch(/^NOPERM/);
      // It was booked: the retry on a client allowed to wait is a duplicate.
      const full = createLedger({
        store: createRedisStore({ client, prefix, durability: DURABLE }),
        capacity: 4,
      });
      expect((await full.apply(entry)).outcome).toBe('duplicate');
      expect(await full.balances('p1')).toEqual({ coins: 5n });
    } finally {
      limited.disconnect();
      await client.call('ACL', 'DELUSER', user);
    }
  });
});

describe('durability.aof on a master without appendonly', () => {
  it(`${'refused before the script runs (Redis >= 7.2), or WAIT alone (before 7.2)'}`, async () => {
    const plain = await startRedis(['--appendonly', 'no']);
    const c = new Redis({ port: plain.port });
    try {
      const prefix = `dur-noaof-${Date.now()}:`;
      const store = createRedisStore({
        client: c,
        prefix,
        durability: { replicas: 0, timeout: '100ms', aof: true },
      });
      const ledger = createLedger({ store, capacity: 4 });
      const idem = createIdempotency({ store, name: 'noaof' });
      const entry = { owner: 'p1', signature: 'round-1', deltas: { coins: 5 } };
      if (!waitaof) {
        // No WAITAOF to refuse it: WAIT for 0 replicas, answered at once.
        expect((await ledger.apply(entry)).outcome).toBe('applied');
        return;
      }
      for (const call of [ledger.apply(entry), idem.run({ key: 'k' }, () => 1)]) {
        const err = await rejected(call);
        expect(coded(err).code).toBe('ERR_STORE');
        expect([(err as StoreError).outcome, (err as StoreError).retriable]).toEqual(['not-applied', false]);
        expect(isOnceflowError((err as StoreError).cause, 'ERR_INVALID_OPTION')).toBe(true);
        expect(String((err as StoreError).cause)).toContain('durability.aof');
      }
      // Nothing was booked.
      expect(await c.keys(`${prefix}*`)).toEqual([]);
    } finally {
      c.disconnect();
      await plain.remove();
    }
  });
});
