// One poison entry in a keyed stream, on the real Redis, with one consumer and the default
// concurrency and batch: the entry is retried after claimIdle and dead-lettered after maxDeliveries,
// the newer entries of its key wait for it without taking every slot the consumer has (those past
// its cap are left pending, spilled, and read back in order), and every other entry is handled
// while the poison is still pending, on the handler path and on the ledger path, also across a
// restart and beside a second consumer.
import { describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { createStreamConsumer, type StreamConsumerOptions } from '../../src/streams/consumer.js';
import { redisRun } from '../support/redis-run.js';
import { pollUntil } from '../support/until.js';

const until = (done: () => boolean | Promise<boolean>, ms = 40_000) => pollUntil(done, ms, 20);

const { client, prefix } = redisRun('streams-poison');
let n = 0;

interface Move {
  owner: string;
  n: number;
  poison?: true;
}

// A poison entry, then 500 entries of its key and 100 of ten other keys: far more than
// `concurrency + batch - 1` (79) newer entries of the key, the point past which a consumer that
// held them behind the poison would have every slot taken and stall for good.
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
    let others = 0;
    // The poison's failed runs and whether it was dead-lettered when the last other entry ran.
    let othersDone: { runs: number; dead: boolean } | undefined;
    let deadLettered = false;
    const c = consume(stream, {
      observer: (e) => {
        if (e.type === 'dead-letter') deadLettered = true;
      },
      handler: (d) => {
        if (d.event.poison) {
          runs++;
          throw new Error('poison');
        }
        const seen = handled.get(d.event.owner) ?? [];
        seen.push(d.event.n);
        handled.set(d.event.owner, seen);
        if (d.event.owner !== 'hot' && ++others === OTHERS) othersDone = { runs, dead: deadLettered };
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
    // The other keys' entries, published after the hot key's 500, did not wait for the poison:
    // all handled while it was still pending (before its maxDeliveries runs were spent).
    expect(othersDone?.dead).toBe(false);
    expect(othersDone?.runs).toBeLessThan(5);
    // Every entry of the hot key once, in stream order, after its poison was settled.
    expect(handled.get('hot')).toEqual(Array.from({ length: HOT }, (_, i) => i + 1));
    expect([...handled.values()].reduce((sum, ns) => sum + ns.length, 0)).toBe(HOT + OTHERS);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 60_000);

  it('ledger path: the poison is dead-lettered, every other entry booked once', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    await fill(stream);
    let failures = 0;
    let others = 0;
    let othersDone: { failures: number; dead: boolean } | undefined;
    let dead = false;
    const hotIds = new Set<string>();
    const c = consume(stream, {
      observer: (e) => {
        if (e.type === 'dead-letter') dead = true;
        // Every entry but the hot key's is booked under an owner k0..k9.
        if (e.type === 'applied' && e.outcome === 'applied' && !hotIds.has(e.id) && ++others === OTHERS) {
          othersDone = { failures, dead };
        }
      },
      ledger: {
        prefix: keyPrefix,
        capacity: 64,
        entry: (d) => {
          if (d.event.owner === 'hot') hotIds.add(d.id);
          if (d.event.poison) {
            failures++;
            throw new Error('poison');
          }
          return { owner: d.event.owner, signature: d.eventId as string, deltas: { n: d.event.n } };
        },
      },
    });
    await until(
      async () => (await deadLetters(stream)).length === 1 && c.consumer.stats.acked === HOT + OTHERS,
    );
    await c.stop();
    // Booked while the poison was still pending, not after it was dead-lettered.
    expect(othersDone?.dead).toBe(false);
    expect(othersDone?.failures).toBeLessThan(5);
    const ledger = createLedger({ store: createRedisStore({ client, prefix: keyPrefix }), capacity: 64 });
    expect(await ledger.balances('hot')).toEqual({ n: BigInt((HOT * (HOT + 1)) / 2) });
    let otherSum = 0n;
    for (let k = 0; k < 10; k++) otherSum += (await ledger.balances(`k${k}`)).n ?? 0n;
    expect(otherSum).toBe(BigInt((OTHERS * (OTHERS + 1)) / 2));
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

describe('spilled entries (a key past its cap while its head waits)', () => {
  it("a second consumer never takes the first one's spilled entries: the hot key runs in stream order", async () => {
    const stream = `${prefix}s${++n}`;
    await fill(stream);
    // Every handling of the hot key, by either consumer, in the order it ran.
    const hot: { by: string; n: number }[] = [];
    let others = 0;
    const handler = (by: string) => (d: { event: Move }) => {
      if (d.event.poison) throw new Error('poison');
      if (d.event.owner === 'hot') hot.push({ by, n: d.event.n });
      else others++;
    };
    const first = consume(stream, { handler: handler('c1') });
    // The first has read the whole stream (the other keys come last): the hot key's entries past
    // its cap are left in its pending list, not held.
    await until(() => others === OTHERS);
    const second = consume(stream, { consumer: 'c2', handler: handler('c2') });
    await until(async () => (await deadLetters(stream)).length === 1 && hot.length >= HOT);
    await first.stop();
    await second.stop();
    expect(hot.map((h) => h.n)).toEqual(Array.from({ length: HOT }, (_, i) => i + 1));
    expect(hot.filter((h) => h.by === 'c2')).toEqual([]);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 60_000);
});

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, flat[i + 1] as string]);
  return out;
}
