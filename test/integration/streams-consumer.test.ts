// The stream consumer on the real Redis: ack, redelivery after a throw, reclaim from a dead
// consumer, dead letters by delivery count, fencing of a reclaimed delivery, per-key order under
// concurrency, graceful shutdown. Entries are published with plain XADD (fields e and i).
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { evalScript } from '../../src/redis/eval.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { scripts } from '../../src/redis/scripts.generated.js';
import {
  createStreamConsumer,
  type Delivery,
  type StreamConsumerOptions,
} from '../../src/streams/consumer.js';
import { parseDeadLetter } from '../../src/streams/dead-letter.js';
import { startConsumer } from '../support/consumer-run.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (done: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) await sleep(10);
  expect(await done()).toBe(true);
};

const client = new Redis(REDIS_URL);
const prefix = runPrefix('streams-consumer');
let n = 0;
const newStream = () => `${prefix}s${++n}`;

afterAll(async () => {
  await cleanupPrefix(client, prefix);
  client.disconnect();
});

async function publish(stream: string, event: unknown, id?: string): Promise<string> {
  const fields = ['e', jsonSerializer.serialize(event)];
  if (id !== undefined) fields.push('i', id);
  return (await client.call('XADD', stream, '*', ...fields)) as string;
}

async function pending(stream: string, group: string): Promise<[string, string, number, number][]> {
  return (await client.call('XPENDING', stream, group, '-', '+', 1000)) as [string, string, number, number][];
}

type Partial<E> = Omit<StreamConsumerOptions<E>, 'client' | 'signal' | 'group' | 'consumer'> & {
  consumer?: string;
  group?: string;
};

function start<E>(options: Partial<E>) {
  return startConsumer<E>({
    client,
    group: 'g',
    consumer: 'c1',
    block: '100ms',
    ...options,
  } as Parameters<typeof startConsumer<E>>[0]);
}

describe('stream consumer', () => {
  it('delivers each entry once, decoded (bigints and Dates kept), and acks it', async () => {
    const stream = newStream();
    const at = new Date(1_700_000_000_000);
    await publish(stream, { amount: 12345678901234567890n, at }, 'ev-1');
    await publish(stream, { amount: 2n, at }, 'ev-2');
    const seen: Delivery<{ amount: bigint; at: Date }>[] = [];
    const c = start<{ amount: bigint; at: Date }>({ stream, handler: (d) => void seen.push(d) });
    await until(() => c.consumer.stats.acked === 2);
    await c.stop();
    expect(seen.map((d) => d.event)).toEqual([
      { amount: 12345678901234567890n, at },
      { amount: 2n, at },
    ]);
    expect(seen.map((d) => [d.eventId, d.deliveries])).toEqual([
      ['ev-1', 1],
      ['ev-2', 1],
    ]);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('leaves an entry whose handler threw pending, and delivers it again after claimIdle', async () => {
    const stream = newStream();
    await publish(stream, { n: 1 });
    const deliveries: number[] = [];
    const c = start<{ n: number }>({
      stream,
      claimIdle: 100,
      handler: (d) => {
        deliveries.push(d.deliveries);
        if (d.deliveries === 1) throw new Error('first try fails');
      },
    });
    await until(() => c.consumer.stats.acked === 1);
    await c.stop();
    expect(deliveries).toEqual([1, 2]);
    expect(c.events.filter((e) => e.type === 'handler-error')).toHaveLength(1);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it("reclaims a dead consumer's entries once they are idle longer than claimIdle", async () => {
    const stream = newStream();
    await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
    for (let i = 0; i < 3; i++) await publish(stream, { i });
    // A consumer that read them and died: pending as `dead`'s, never acked.
    await client.call('XREADGROUP', 'GROUP', 'g', 'dead', 'COUNT', 10, 'STREAMS', stream, '>');
    const seen: [number, number][] = [];
    const c = start<{ i: number }>({
      stream,
      consumer: 'alive',
      claimIdle: 150,
      handler: (d) => void seen.push([d.event.i, d.deliveries]),
    });
    await until(() => c.consumer.stats.acked === 3);
    await c.stop();
    expect(seen).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('dead-letters an entry after maxDeliveries, with the XACK in the same script', async () => {
    const stream = newStream();
    const poisonId = await publish(stream, { poison: true }, 'poison-1');
    await publish(stream, { poison: false }, 'fine-1');
    const c = start<{ poison: boolean }>({
      stream,
      claimIdle: 60,
      maxDeliveries: 2,
      handler: (d) => {
        if (d.event.poison) throw new Error(`cannot handle delivery ${d.deliveries}`);
      },
    });
    await until(() => c.consumer.stats.deadLettered === 1);
    await c.stop();
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    expect(dead).toHaveLength(1);
    const fields = Object.fromEntries(
      (dead[0]?.[1] as string[]).flatMap((v, i, a) => (i % 2 === 0 ? [[v, a[i + 1]]] : [])),
    );
    expect(fields).toMatchObject({
      reason: 'max-deliveries',
      attempts: '2',
      first_error: 'Error: cannot handle delivery 1',
      last_error: 'Error: cannot handle delivery 2',
      origin: `${stream}/g/${poisonId}`,
      event: jsonSerializer.serialize({ poison: true }),
      id: 'poison-1',
    });
    expect(Number(fields.at)).toBeGreaterThan(Date.now() - 60_000);
    expect(c.consumer.stats.acked).toBe(1);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('counts handler runs, not deliveries: an entry only ever held by dying consumers is not dead-lettered', async () => {
    const stream = newStream();
    await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
    await publish(stream, { held: true });
    // Read, then passed between consumers that died before running it: delivery count 6.
    const read = (await client.call('XREADGROUP', 'GROUP', 'g', 'd1', 'STREAMS', stream, '>')) as [
      string,
      [string][],
    ][];
    const id = read[0]?.[1][0]?.[0] as string;
    for (let i = 2; i <= 6; i++) await client.call('XCLAIM', stream, 'g', `d${i}`, 0, id);
    const seen: number[] = [];
    const c = start<unknown>({
      stream,
      claimIdle: 60,
      maxDeliveries: 3,
      handler: (d) => void seen.push(d.deliveries),
    });
    await until(() => c.consumer.stats.acked === 1);
    await c.stop();
    expect(seen).toEqual([7]);
    expect(c.consumer.stats.deadLettered).toBe(0);
    expect(await client.call('EXISTS', `${stream}:attempts`)).toBe(0);
  });

  it('dead-letters an entry whose event cannot be decoded at once (terminal-error)', async () => {
    const stream = newStream();
    await client.call('XADD', stream, '*', 'e', '{not json');
    const c = start<unknown>({ stream, handler: () => {} });
    await until(() => c.consumer.stats.deadLettered === 1);
    await c.stop();
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    expect(dead[0]?.[1].slice(0, 4)).toEqual(['reason', 'terminal-error', 'attempts', '1']);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('a dead letter keeps every field of a foreign entry (no field e): none dropped, no empty event', async () => {
    const stream = newStream();
    const id = (await client.call(
      'XADD',
      stream,
      '*',
      'payload',
      '{"amount":5}',
      'source',
      'legacy',
      'i',
      'x-1',
    )) as string;
    const c = start<unknown>({ stream, handler: () => {} });
    await until(() => c.consumer.stats.deadLettered === 1);
    await c.stop();
    // Trimmed away, the original's content lives on in its dead letter only.
    await client.call('XDEL', stream, id);
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    const letter = parseDeadLetter(dead[0]?.[1] ?? []);
    expect(letter).toMatchObject({
      reason: 'terminal-error',
      origin: `${stream}/g/${id}`,
      id: 'x-1',
      'field:payload': '{"amount":5}',
      'field:source': 'legacy',
    });
    expect(letter.event).toBeUndefined();
    expect(letter.last_error).toMatch(/no field `e`/);
  });

  it('a dead letter written after its entry was deleted keeps the fields the consumer read', async () => {
    const stream = newStream();
    await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = (await client.call(
      'XADD',
      stream,
      '*',
      'e',
      '{"n":1}',
      'i',
      'ev-1',
      'note',
      'kept',
    )) as string;
    await client.call('XREADGROUP', 'GROUP', 'g', 'c1', 'STREAMS', stream, '>');
    await client.call('XDEL', stream, id); // still pending: its dead letter can be written, its fields are gone
    const done = await evalScript(
      client,
      scripts.streamDead,
      [stream, `${stream}:dead`, `${stream}:attempts`],
      [
        'g',
        'c1',
        id,
        1,
        'max-deliveries',
        'boom',
        'boom',
        '',
        5,
        'e',
        '{"n":1}',
        'i',
        'ev-1',
        'note',
        'kept',
      ],
    );
    expect(done).toBe(1);
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    expect(parseDeadLetter(dead[0]?.[1] ?? [])).toMatchObject({
      reason: 'max-deliveries',
      event: '{"n":1}',
      id: 'ev-1',
      'field:note': 'kept',
    });
  });

  it('refuses the ack of a zombie whose delivery was reclaimed (fencing), and the new holder acks it', async () => {
    const stream = newStream();
    const id = await publish(stream, { x: 1 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = false;
    const zombie = start<{ x: number }>({
      stream,
      consumer: 'zombie',
      claimIdle: '1m',
      handler: async () => {
        entered = true;
        await gate;
      },
    });
    await until(() => entered);
    // Another consumer takes the delivery over while the zombie still runs it.
    await client.call('XCLAIM', stream, 'g', 'heir', 0, id);
    release();
    await until(() => zombie.consumer.stats.fenced === 1);
    await zombie.stop();
    expect(zombie.consumer.stats.acked).toBe(0);
    expect(zombie.events).toContainEqual({ part: 'stream-consumer', type: 'fenced', id, deliveries: 1 });
    const [entry] = await pending(stream, 'g');
    expect(entry?.[1]).toBe('heir');
    expect(entry?.[3]).toBe(2);
    // The heir's ack (its token: delivery 2) goes through.
    const acked = await client.call(
      'EVAL',
      (await import('../../src/redis/scripts.generated.js')).scripts.streamAck.text,
      1,
      stream,
      'g',
      'heir',
      id,
      2,
    );
    expect(acked).toEqual([1]);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('runs a key one entry at a time in stream order (also across a failure), keys in parallel', async () => {
    const stream = newStream();
    const KEYS = 4;
    const PER_KEY = 12;
    for (let i = 0; i < PER_KEY; i++) for (let k = 0; k < KEYS; k++) await publish(stream, { k, i });
    const running = new Map<number, number>();
    let maxParallel = 0;
    let now = 0;
    const order = new Map<number, number[]>();
    const failed = new Set<string>();
    const overlaps: number[] = [];
    const c = start<{ k: number; i: number }>({
      stream,
      concurrency: 4,
      claimIdle: 100,
      batch: 16,
      key: (d) => `key-${d.event.k}`,
      handler: async ({ id, event }) => {
        // Recorded, not asserted here: a throw in the handler is the consumer's, not the test's.
        if ((running.get(event.k) ?? 0) !== 0) overlaps.push(event.k);
        running.set(event.k, 1);
        now++;
        maxParallel = Math.max(maxParallel, now);
        await sleep(1 + ((event.i * 7 + event.k * 3) % 5));
        now--;
        running.set(event.k, 0);
        // The 3rd entry of key 1 fails once: key 1 waits for its redelivery.
        if (event.k === 1 && event.i === 2 && !failed.has(id)) {
          failed.add(id);
          throw new Error('once');
        }
        order.set(event.k, [...(order.get(event.k) ?? []), event.i]);
      },
    });
    await until(() => c.consumer.stats.acked === KEYS * PER_KEY, 20_000);
    await c.stop();
    const inOrder = Array.from({ length: PER_KEY }, (_, i) => i);
    expect(overlaps).toEqual([]);
    for (let k = 0; k < KEYS; k++) expect(order.get(k)).toEqual(inOrder);
    expect(maxParallel).toBeGreaterThan(1);
    expect(maxParallel).toBeLessThanOrEqual(4);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('on abort stops reading at once, finishes the handler in flight and acks it', async () => {
    const stream = newStream();
    await publish(stream, { slow: true });
    let entered = false;
    let finished = false;
    const c = start<unknown>({
      stream,
      block: '10s',
      handler: async () => {
        entered = true;
        await sleep(300);
        finished = true;
      },
    });
    await until(() => entered);
    const t0 = Date.now();
    await c.stop();
    expect(finished).toBe(true);
    expect(c.consumer.stats.acked).toBe(1);
    expect(await pending(stream, 'g')).toEqual([]);
    // Ended by CLIENT UNBLOCK, not by the 10 s BLOCK running out.
    expect(Date.now() - t0).toBeLessThan(3000);
    // An idle consumer stops as fast: its blocked read is unblocked.
    const idle = start<unknown>({ stream, consumer: 'c2', block: '10s', handler: () => {} });
    await sleep(100);
    const t1 = Date.now();
    await idle.stop();
    expect(Date.now() - t1).toBeLessThan(3000);
  });

  it('keeps an entry that waits its key turn from being reclaimed by another consumer (touch)', async () => {
    const stream = newStream();
    await publish(stream, { i: 0 });
    await publish(stream, { i: 1 });
    const seenBy: string[] = [];
    // The first entry runs ~4 claimIdle periods; the second waits behind it on the same key.
    const slow = start<{ i: number }>({
      stream,
      consumer: 'slow',
      claimIdle: 150,
      key: () => 'one',
      handler: async (d) => {
        if (d.event.i === 0) await sleep(600);
        seenBy.push(`slow:${d.event.i}:${d.deliveries}`);
      },
    });
    await sleep(50);
    const other = start<{ i: number }>({
      stream,
      consumer: 'other',
      claimIdle: 150,
      handler: (d) => void seenBy.push(`other:${d.event.i}`),
    });
    await until(() => slow.consumer.stats.acked === 2);
    await Promise.all([slow.stop(), other.stop()]);
    expect(seenBy).toEqual(['slow:0:1', 'slow:1:1']);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('other effects: createIdempotency keyed by the event id makes a redelivered handler safe', async () => {
    const stream = newStream();
    await publish(stream, { amount: 5 }, 'charge-1');
    const idem = createIdempotency({
      store: createRedisStore({ client, prefix: `${prefix}idem:` }),
      ttl: '1h',
    });
    let charges = 0;
    const c = start<{ amount: number }>({
      stream,
      claimIdle: 100,
      handler: async (d) => {
        await idem.run({ key: d.eventId ?? d.id, payload: d.event }, () => ++charges);
        // A crash after the effect, before the ack: the entry is delivered again.
        if (d.deliveries === 1) throw new Error('crashed before the ack');
      },
    });
    await until(() => c.consumer.stats.acked === 1);
    await c.stop();
    expect(charges).toBe(1);
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('a handler booking with ledger.apply and d.order: a redelivery after the window moved on is stale, not applied', async () => {
    const stream = newStream();
    for (let i = 1; i <= 4; i++) await publish(stream, { coins: i }, `pay-${i}`);
    // Capacity 2: once pay-2..pay-4 are booked, pay-1 has left p1's window.
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: `${prefix}order:` }),
      capacity: 2,
    });
    const outcomes: string[] = [];
    const c = start<{ coins: number }>({
      stream,
      claimIdle: 100,
      handler: async (d) => {
        const r = await ledger.apply({
          owner: 'p1',
          signature: d.eventId ?? d.id,
          deltas: { coins: d.event.coins },
          order: d.order,
        });
        outcomes.push(`${d.eventId}:${r.outcome}`);
        // The first delivery of pay-1 crashes after its booking, before the ack; it comes back
        // after claimIdle, once the newer entries have moved the window on.
        if (d.eventId === 'pay-1' && d.deliveries === 1) throw new Error('crashed before the ack');
      },
    });
    await until(() => c.consumer.stats.acked === 4);
    await c.stop();
    expect(outcomes).toContain('pay-1:applied');
    expect(outcomes).toContain('pay-1:stale');
    expect(await ledger.balances('p1')).toEqual({ coins: 10n });
    expect(await pending(stream, 'g')).toEqual([]);
  });

  it('gives each delivery its stream id as a bigint order, rising along the stream', async () => {
    const stream = newStream();
    const ids = [await publish(stream, 1), await publish(stream, 2)];
    const orders: bigint[] = [];
    const c = start<number>({ stream, handler: (d) => void orders.push(d.order) });
    await until(() => c.consumer.stats.acked === 2);
    await c.stop();
    const expected = ids.map((id) => {
      const [ms, seq] = id.split('-') as [string, string];
      return BigInt(ms) * 2n ** 64n + BigInt(seq);
    });
    expect(orders).toEqual(expected);
    expect(expected[0] as bigint).toBeLessThan(expected[1] as bigint);
  });

  it('a claimIdle past the 2^31 ms timer limit does not spin the claim loop (its wait is clamped)', async () => {
    const stream = newStream();
    let claims = 0;
    const counting = {
      call: (...args: unknown[]) => {
        if (args[0] === 'EVALSHA' && args[1] === scripts.streamClaim.sha1) claims++;
        return (client.call as (...a: unknown[]) => Promise<unknown>)(...args);
      },
      duplicate: () => client.duplicate(),
    };
    const c = start<unknown>({ stream, client: counting, claimIdle: '100d', handler: () => {} } as never);
    await sleep(500);
    await c.stop();
    // One claim at start, then the next one in 24.8 days: not one per millisecond.
    expect(claims).toBeLessThanOrEqual(2);
  });

  it('refuses bad options by name', () => {
    const signal = new AbortController().signal;
    const base = { client, stream: 's', group: 'g', consumer: 'c', signal };
    expect(() => createStreamConsumer({ ...base } as never)).toThrow(/exactly one of `handler` and `ledger`/);
    expect(() => createStreamConsumer({ ...base, handler: () => {}, block: 0 })).toThrow(/`block`/);
    expect(() => createStreamConsumer({ ...base, handler: () => {}, concurrency: 0 })).toThrow(
      /`concurrency`/,
    );
    expect(() => createStreamConsumer({ ...base, handler: () => {}, claimIdle: '10ms' })).toThrow(
      /`claimIdle`/,
    );
  });
});
