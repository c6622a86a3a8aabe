// The consumer's exactly-once path on the real Redis (and Cluster): each entry's ledger booking,
// its dedup mark (the signature window) and its XACK are one script (stream-apply-ack.lua), fenced
// by the delivery. A reply lost after the script ran cannot book twice, and a zombie cannot book.
import { type Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Duration } from '../../src/core/duration.js';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { ownerKeys } from '../../src/redis/keys.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import {
  createStreamConsumer,
  type Delivery,
  type StreamClient,
  type StreamLedgerOptions,
} from '../../src/streams/consumer.js';
import { startTcpProxy } from '../../src/testing/tcp-proxy.js';
import { startConsumer } from '../support/consumer-run.js';
import { redisRun } from '../support/redis-run.js';
import { pollUntil } from '../support/until.js';
import { cleanupPrefix, clusterClient, REDIS_URL } from './redis-env.js';

const until = (done: () => boolean | Promise<boolean>, ms = 10_000) => pollUntil(done, ms, 10);

interface Payment {
  owner: string;
  amount: number;
}

const { client, prefix } = redisRun('streams-ledger');
let n = 0;

async function publish(c: Redis | Cluster, stream: string, event: Payment, id: string): Promise<string> {
  return (await c.call('XADD', stream, '*', 'e', jsonSerializer.serialize(event), 'i', id)) as string;
}

const CAPACITY = 64;
const entry = (d: Delivery<Payment>) => ({
  owner: d.event.owner,
  signature: d.eventId as string,
  deltas: { coins: d.event.amount },
});

function start(
  c: StreamClient,
  stream: string,
  keyPrefix: string,
  ledger: Partial<StreamLedgerOptions<Payment>> = {},
  more: { consumer?: string; claimIdle?: Duration } = {},
) {
  return startConsumer<Payment>({
    client: c,
    stream,
    group: 'g',
    consumer: more.consumer ?? 'c1',
    block: '100ms',
    claimIdle: more.claimIdle ?? '1m',
    concurrency: 8,
    key: (d) => d.event.owner,
    ledger: { capacity: CAPACITY, prefix: keyPrefix, entry, ...ledger },
  });
}

describe('stream consumer, ledger path (booking + XACK in one script)', () => {
  it('books every event exactly once, a republished event answers duplicate, and nothing stays pending', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    const expected = new Map<string, bigint>();
    let total = 0;
    for (let i = 0; i < 60; i++) {
      const owner = `p${i % 5}`;
      await publish(client, stream, { owner, amount: i + 1 }, `pay-${i}`);
      expected.set(owner, (expected.get(owner) ?? 0n) + BigInt(i + 1));
      total++;
      // Every 6th event published twice (a producer without dedup): booked once.
      if (i % 6 === 0) {
        await publish(client, stream, { owner, amount: i + 1 }, `pay-${i}`);
        total++;
      }
    }
    const c = start(client, stream, keyPrefix);
    await until(() => c.consumer.stats.acked === total);
    await c.stop();
    const outcomes = c.events.flatMap((e) => (e.type === 'applied' ? [e.outcome] : []));
    expect(outcomes.filter((o) => o === 'applied')).toHaveLength(60);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(10);
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: keyPrefix }),
      capacity: CAPACITY,
    });
    for (const [owner, coins] of expected) {
      expect(await ledger.balances(owner)).toEqual({ coins });
      expect(await ledger.journal({ owner })).toHaveLength(12);
    }
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  });

  it('a reply lost after the script ran books once: the effect and the ack were one step', async () => {
    const port = Number(new URL(REDIS_URL).port || 6379);
    const proxy = await startTcpProxy(port);
    const through = new Redis(proxy.port, '127.0.0.1');
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    await publish(client, stream, { owner: 'p1', amount: 7 }, 'pay-lost');
    await publish(client, stream, { owner: 'p1', amount: 5 }, 'pay-after');
    let armed = true;
    const c = start(through, stream, keyPrefix, {
      entry: (d) => {
        // The next script call is this entry's apply-ack: its reply is lost, the connection killed.
        if (armed) proxy.loseNextReply();
        armed = false;
        return entry(d);
      },
    });
    // The lost reply's entry: whatever the client made of it (sent again and answered `fenced`,
    // or failed), it was booked and acked once; the next entry books normally.
    const settled = async () =>
      c.consumer.stats.delivered >= 2 &&
      ((await client.call('XPENDING', stream, 'g', '-', '+', 10)) as unknown[]).length === 0;
    await until(settled);
    await c.stop();
    expect(proxy.killed).toBeGreaterThanOrEqual(1);
    // ioredis sent the script again once it reconnected: the entry was acked by then, so the fence
    // answered `fenced` and nothing was booked a second time.
    expect(c.consumer.stats.fenced).toBe(1);
    expect(c.events.filter((e) => e.type === 'fenced')).toMatchObject([{ deliveries: 1 }]);
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: keyPrefix }),
      capacity: CAPACITY,
    });
    expect(await ledger.balances('p1')).toEqual({ coins: 12n });
    const journal = await ledger.journal({ owner: 'p1' });
    expect(journal.map((j) => j.signature)).toEqual(['pay-lost', 'pay-after']);
    through.disconnect();
    await proxy.close();
  });

  it('a zombie whose delivery was reclaimed books nothing and acks nothing (fenced in the script)', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    const id = await publish(client, stream, { owner: 'p1', amount: 9 }, 'pay-z');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = false;
    const zombie = start(client, stream, keyPrefix, {
      entry: async (d) => {
        entered = true;
        await gate;
        return entry(d);
      },
    });
    await until(() => entered);
    await client.call('XCLAIM', stream, 'g', 'heir', 0, id);
    release();
    await until(() => zombie.consumer.stats.fenced === 1);
    await zombie.stop();
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: keyPrefix }),
      capacity: CAPACITY,
    });
    expect(await ledger.balances('p1')).toEqual({});
    const [p] = (await client.call('XPENDING', stream, 'g', '-', '+', 10)) as [string, string][];
    expect(p?.[1]).toBe('heir');
    // The heir (here a consumer of that name, once the entry is idle) books it once.
    const heir = start(client, stream, keyPrefix, {}, { consumer: 'heir', claimIdle: 60 });
    await until(() => heir.consumer.stats.acked === 1);
    await heir.stop();
    expect(await ledger.balances('p1')).toEqual({ coins: 9n });
  });

  it('dead-letters an entry the ledger answers stale and its journal cannot settle (never dropped silently)', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    // Capacity 1 with orders: the second entry evicts the first (horizon 1); a third at order 1 is
    // stale, and with no journal kept nothing proves it new: unknown, dead-lettered.
    for (const [sig, order] of [
      ['a', 1],
      ['b', 2],
      ['c', 1],
    ] as const) {
      await client.call(
        'XADD',
        stream,
        '*',
        'e',
        jsonSerializer.serialize({ owner: 'p1', amount: 1, order }),
        'i',
        sig,
      );
    }
    const c = start(client, stream, keyPrefix, {
      capacity: 1,
      journal: { maxEntriesPerOwner: 0 },
      entry: (d) => ({ ...entry(d), order: (d.event as Payment & { order: number }).order }),
    });
    await until(() => c.consumer.stats.acked === 2 && c.consumer.stats.deadLettered === 1);
    await c.stop();
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    expect(dead).toHaveLength(1);
    expect(dead[0]?.[1].slice(0, 2)).toEqual(['reason', 'ledger-stale']);
    expect(dead[0]?.[1]).toContain('c');
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  });

  it('on Cluster: books an owner in the stream slot, dead-letters one in another slot (typed error)', async () => {
    const cluster = clusterClient();
    const clusterPrefix = `${prefix}cl${++n}:`;
    try {
      // The stream carries the owner's hash tag, so its keys and the owner's share a slot.
      const [state] = ownerKeys(clusterPrefix, 'default', 'p1');
      const tag = state.slice(state.indexOf('{'), state.indexOf('}') + 1);
      const stream = `${clusterPrefix}${tag}:events`;
      await publish(cluster, stream, { owner: 'p1', amount: 3 }, 'ok-1');
      await publish(cluster, stream, { owner: 'elsewhere', amount: 4 }, 'bad-1');
      const c = start(cluster as unknown as StreamClient, stream, clusterPrefix);
      await until(() => c.consumer.stats.acked + c.consumer.stats.deadLettered === 2, 20_000);
      await c.stop();
      const ledger = createLedger({
        store: createRedisStore({ client: cluster, prefix: clusterPrefix }),
        capacity: CAPACITY,
      });
      expect(await ledger.balances('p1')).toEqual({ coins: 3n });
      const dead = (await cluster.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
      expect(dead).toHaveLength(1);
      expect(dead[0]?.[1].slice(0, 2)).toEqual(['reason', 'terminal-error']);
      expect(dead[0]?.[1].join(' ')).toMatch(/share the stream's hash slot/);
      // A dead-letter stream in another slot is refused when the consumer is made.
      expect(() =>
        createStreamConsumer({
          client: cluster as unknown as StreamClient,
          stream,
          group: 'g',
          consumer: 'c',
          handler: () => {},
          deadLetter: { stream: `${clusterPrefix}dead` },
          signal: new AbortController().signal,
        }),
      ).toThrow(/same hash slot/);
      for (const key of [stream, `${stream}:dead`, state, ownerKeys(clusterPrefix, 'default', 'p1')[1]]) {
        await cluster.call('DEL', key);
      }
    } finally {
      await cleanupPrefix(cluster, clusterPrefix);
      cluster.disconnect();
    }
  });
});
