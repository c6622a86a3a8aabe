// Entries the consumer can no longer take at face value, on the real Redis: on the ledger path, an
// entry the window answers `stale` is settled from the owner's journal before anything is
// dead-lettered (booked when provably new, acked as a repeat when the journal holds it); and a
// failed entry trimmed from the stream while pending is dead-lettered from the consumer's own copy
// of its fields, not reported fenced.
import { describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import type { StreamConsumerEvent } from '../../src/streams/consumer.js';
import { streamOrder } from '../../src/streams/delivery.js';
import { startConsumer } from '../support/consumer-run.js';
import { redisRun } from '../support/redis-run.js';
import { pollUntil } from '../support/until.js';

const until = (done: () => boolean | Promise<boolean>, ms = 30_000) => pollUntil(done, ms, 20);

interface Move {
  owner: string;
  coins: number;
}

const { client, prefix } = redisRun('streams-stale');
let n = 0;

async function publish(stream: string, event: Move, id: string): Promise<string> {
  return (await client.call('XADD', stream, '*', 'e', jsonSerializer.serialize(event), 'i', id)) as string;
}

async function deadLetters(stream: string): Promise<Record<string, string>[]> {
  const raw = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
  return raw.map(([, flat]) => {
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
    return out;
  });
}

// A crash that makes a redelivery `stale`: capacity 2, key = owner, the recommended
// `order: d.order`. A crashed incarnation of c1 read X1 and did not book it; the restarted c1
// books Y1..Y4 at once and gets X1 back only after claimIdle, below the horizon: `stale`.
async function crashedRead(stream: string): Promise<string> {
  await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
  const x1 = await publish(stream, { owner: 'p1', coins: 1000 }, 'x1');
  await client.call('XREADGROUP', 'GROUP', 'g', 'c1', 'COUNT', 1, 'STREAMS', stream, '>');
  for (let i = 1; i <= 4; i++) await publish(stream, { owner: 'p1', coins: 1 }, `y${i}`);
  return x1;
}

function consumeLedger(stream: string, keyPrefix: string) {
  return startConsumer<Move>({
    client,
    stream,
    group: 'g',
    consumer: 'c1',
    block: '100ms',
    // Long enough that Y1..Y4 are booked before X1 comes back (checked below).
    claimIdle: '2s',
    key: (d) => d.event.owner,
    ledger: {
      prefix: keyPrefix,
      capacity: 2,
      entry: (d) => ({
        owner: d.event.owner,
        signature: d.eventId as string,
        deltas: { coins: d.event.coins },
        order: d.order,
      }),
    },
  });
}

const applied = (events: StreamConsumerEvent[]) =>
  events.flatMap((e) => (e.type === 'applied' ? [`${e.id}:${e.outcome}`] : []));

describe('ledger path: a stale answer is settled by the journal', () => {
  it('an entry never booked, reclaimed after newer entries of its owner: booked (1004, not 4)', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    const x1 = await crashedRead(stream);
    const c = consumeLedger(stream, keyPrefix);
    await until(() => c.consumer.stats.acked === 4);
    // The repro holds only if X1 came back after Y1..Y4 were booked.
    expect(applied(c.events).some((a) => a.startsWith(x1))).toBe(false);
    await until(() => c.consumer.stats.acked === 5);
    await c.stop();
    const ledger = createLedger({ store: createRedisStore({ client, prefix: keyPrefix }), capacity: 2 });
    expect(await ledger.balances('p1')).toEqual({ coins: 1004n });
    expect(applied(c.events)).toContain(`${x1}:applied`);
    expect(await deadLetters(stream)).toEqual([]);
    expect(c.consumer.stats.deadLettered).toBe(0);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 40_000);

  it('an entry booked before its ack was lost, back after the window moved on: acked as a duplicate, booked once', async () => {
    const stream = `${prefix}s${++n}`;
    const keyPrefix = `${prefix}l${n}:`;
    const x1 = await crashedRead(stream);
    // The crashed incarnation had booked X1 (same signature and order) but not acked it.
    const ledger = createLedger({ store: createRedisStore({ client, prefix: keyPrefix }), capacity: 2 });
    await ledger.apply({ owner: 'p1', signature: 'x1', deltas: { coins: 1000 }, order: streamOrder(x1) });
    const c = consumeLedger(stream, keyPrefix);
    await until(() => c.consumer.stats.acked === 5);
    await c.stop();
    expect(await ledger.balances('p1')).toEqual({ coins: 1004n });
    expect(applied(c.events)).toContain(`${x1}:duplicate`);
    expect(await deadLetters(stream)).toEqual([]);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 40_000);
});

describe('a failed entry trimmed from the stream while pending', () => {
  it('is dead-lettered from the consumer’s copy of its fields, not reported fenced', async () => {
    const stream = `${prefix}s${++n}`;
    const poison = (await client.call(
      'XADD',
      stream,
      '*',
      'e',
      jsonSerializer.serialize({ owner: 'p1', coins: 1 }),
      'i',
      'poison-1',
      'extra',
      'kept',
    )) as string;
    let failures = 0;
    const run = startConsumer<Move>({
      client,
      stream,
      group: 'g',
      consumer: 'c1',
      block: '100ms',
      claimIdle: '300ms',
      key: (d) => d.event.owner,
      handler: () => {
        failures++;
        throw new Error('cannot handle it');
      },
    });
    await until(() => failures >= 1);
    // Trimmed while it waits to be retried (pending, failed, held by c1).
    await client.call('XDEL', stream, poison);
    await until(async () => (await deadLetters(stream)).length === 1);
    await run.stop();
    const [letter] = await deadLetters(stream);
    expect(letter).toMatchObject({
      reason: 'handler-error',
      last_error: 'Error: cannot handle it',
      origin: `${stream}/g/${poison}`,
      event: jsonSerializer.serialize({ owner: 'p1', coins: 1 }),
      id: 'poison-1',
      'field:extra': 'kept',
    });
    expect(Number(letter?.attempts)).toBe(failures);
    expect(run.consumer.stats.fenced).toBe(0);
    expect(run.consumer.stats.deadLettered).toBe(1);
    expect(run.events.some((e) => e.type === 'fenced')).toBe(false);
    expect(await client.call('XPENDING', stream, 'g', '-', '+', 10)).toEqual([]);
  }, 40_000);
});
