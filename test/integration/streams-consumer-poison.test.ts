// One poison entry in a keyed stream, on the real Redis, with one consumer and the default
// concurrency and batch: the entry is retried after claimIdle and dead-lettered after maxDeliveries,
// the newer entries of its key wait for it without taking every slot the consumer has, and every
// other entry is handled, on the handler path and on the ledger path, also across a restart.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { createStreamConsumer, type StreamConsumerOptions } from '../../src/streams/consumer.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (done: () => boolean | Promise<boolean>, ms = 40_000) => {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) await sleep(20);
  expect(await done()).toBe(true);
};

const client = new Redis(REDIS_URL);
const prefix = runPrefix('streams-poison');
let n = 0;

afterAll(async () => {
  await cleanupPrefix(client, prefix);
  client.disconnect();
});

interface Move {
  owner: string;
  n: number;
  poison?: true;
}

// The load: a poison entry, then 500 entries of its key and 100 of ten other keys. Past
// `concurrency + batch - 1` (79) newer entries of the key the consumer used to stall for good.
const HOT = 500;
const OTHERS = 100;

async function fill(stream: string): Promise<string> {
  const poison = (await client.call(
    'XADD',
    stream,
    '*',
    'e',
    jsonSerializer.serialize({ owner: 'hot', n: 0, poison: true }),
    'i',
    'hot-0',
  )) as string;
  const pipeline = client.pipeline();
  for (let i = 1; i <= HOT; i++) {
    pipeline.xadd(stream, '*', 'e', jsonSerializer.serialize({ owner: 'hot', n: i }), 'i', `hot-${i}`);
  }
  for (let i = 1; i <= OTHERS; i++) {
    const owner = `k${i % 10}`;
    pipeline.xadd(stream, '*', 'e', jsonSerializer.serialize({ owner, n: i }), 'i', `${owner}-${i}`);
  }
  await pipeline.exec();
  return poison;
}

async function deadLetters(stream: string): Promise<[string, string[]][]> {
  return (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
}

// One consumer, defaults except a short claimIdle (the poison's five runs then take seconds).
function consume(stream: string, more: Partial<StreamConsumerOptions<Move>>) {
  const controller = new AbortController();
  const consumer = createStreamConsumer<Move>({
    client,
    stream,
    group: 'g',
    consumer: 'c1',
    block: '100ms',
    claimIdle: '500ms',
    key: (d) => d.event.owner,
    signal: controller.signal,
    ...more,
  } as StreamConsumerOptions<Move>);
  const done = consumer.run();
  return {
    consumer,
    stop: () => {
      controller.abort();
      return done;
    },
  };
}

describe('a poison entry in a keyed stream (one consumer, default concurrency and batch)', () => {
  it('handler path: the poison is dead-lettered after maxDeliveries, every other entry handled in key order', async () => {
    const stream = `${prefix}s${++n}`;
    const poison = await fill(stream);
    const handled = new Map<string, number[]>();
    let runs = 0;
    const c = consume(stream, {
      handler: (d) => {
        if (d.event.poison) {
          runs++;
          throw new Error('poison');
        }
        const seen = handled.get(d.event.owner) ?? [];
        seen.push(d.event.n);
        handled.set(d.event.owner, seen);
      },
    });
    await until(
      async () => (await deadLetters(stream)).length === 1 && c.consumer.stats.acked === HOT + OTHERS,
    );
    await c.stop();
    const dead = await deadLetters(stream);
    expect(Object.fromEntries(pairs(dead[0]?.[1] ?? []))).toMatchObject({
      reason: 'max-deliveries',
      attempts: '5',
      origin: `${stream}/g/${poison}`,
    });
    expect(runs).toBe(5);
    // Every entry of the hot key once, in stream order, after its poison was settled.
    expect(handled.get('hot')).toEqual(Array.from({ length: HOT }, (_, i) => i + 1));
    expect([...handled.values()].reduce((sum, ns) => sum + ns.length, 0)).toBe(HOT + OTHERS);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 60_000);

  it('ledger path: the poison is dead-lettered, every other entry booked once', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    await fill(stream);
    const c = consume(stream, {
      ledger: {
        prefix: keyPrefix,
        capacity: 64,
        entry: (d) => {
          if (d.event.poison) throw new Error('poison');
          return { owner: d.event.owner, signature: d.eventId as string, deltas: { n: d.event.n } };
        },
      },
    });
    await until(
      async () => (await deadLetters(stream)).length === 1 && c.consumer.stats.acked === HOT + OTHERS,
    );
    await c.stop();
    const ledger = createLedger({ store: createRedisStore({ client, prefix: keyPrefix }), capacity: 64 });
    expect(await ledger.balances('hot')).toEqual({ n: BigInt((HOT * (HOT + 1)) / 2) });
    let others = 0n;
    for (let k = 0; k < 10; k++) others += (await ledger.balances(`k${k}`)).n ?? 0n;
    expect(others).toBe(BigInt((OTHERS * (OTHERS + 1)) / 2));
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 60_000);

  it("while a key is blocked behind its poison, a dead consumer's entries of other keys are still reclaimed and handled", async () => {
    const stream = `${prefix}s${++n}`;
    await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
    for (let i = 1; i <= 5; i++) {
      await client.call(
        'XADD',
        stream,
        '*',
        'e',
        jsonSerializer.serialize({ owner: 'z', n: i }),
        'i',
        `z-${i}`,
      );
    }
    // A consumer that read the five and died: they become idle, to be reclaimed after claimIdle.
    await client.call('XREADGROUP', 'GROUP', 'g', 'dead', 'COUNT', 5, 'STREAMS', stream, '>');
    await fill(stream);
    const handled: number[] = [];
    const c = consume(stream, {
      // The poison is never given up on within the test: its key stays blocked throughout.
      maxDeliveries: 1000,
      handler: (d) => {
        if (d.event.poison) throw new Error('poison');
        if (d.event.owner === 'z') handled.push(d.event.n);
      },
    });
    await until(() => handled.length === 5);
    await c.stop();
    expect(handled).toEqual([1, 2, 3, 4, 5]);
  }, 60_000);

  it('a restart behind the poison clears it too: dead-lettered, every other entry handled', async () => {
    const stream = `${prefix}s${++n}`;
    await fill(stream);
    const handled = new Set<string>();
    let failures = 0;
    const handler = (d: { id: string; event: Move }) => {
      if (d.event.poison) {
        failures++;
        throw new Error('poison');
      }
      handled.add(d.id);
    };
    const first = consume(stream, { handler });
    await until(() => failures >= 2);
    await first.stop();
    const second = consume(stream, { handler });
    await until(async () => (await deadLetters(stream)).length === 1 && handled.size === HOT + OTHERS);
    await second.stop();
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 60_000);
});

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}
