// The stream consumer's Bloom pre-check on the real Redis (docs/pre-checks.md): a filter flooded
// until about half of never-seen ids answer "maybe" in front of the handler; every entry is
// acked, every event's handler runs exactly once, the repeats are acked without it by the `seen`
// read, and the false positives only cost that read.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createStreamConsumer, type StreamConsumerEvent } from '../../src/streams/consumer.js';
import { SeenFilter } from '../../src/windows/seen-filter.js';
import { startConsumer } from '../support/consumer-run.js';
import { measuredFalsePositiveRate } from '../support/pre-check-replay.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (done: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await sleep(10);
  expect(done()).toBe(true);
};

const client = new Redis(REDIS_URL);
const prefix = runPrefix('streams-pre-check');
afterAll(async () => {
  await cleanupPrefix(client, prefix);
  client.disconnect();
});

async function publish(stream: string, event: unknown, id?: string): Promise<void> {
  const fields = ['e', jsonSerializer.serialize(event)];
  if (id !== undefined) fields.push('i', id);
  await client.call('XADD', stream, '*', ...fields);
}

const outcomes = (events: StreamConsumerEvent[]) =>
  events.flatMap((e) => (e.type === 'pre-check' ? [e.outcome] : []));

describe('stream consumer pre-check', () => {
  it('a flooded filter: every entry acked, each event handled once, repeats acked by the seen read', async () => {
    const stream = `${prefix}flood`;
    // 30 events, each appended twice (a producer that retried without its dedup), and 10 entries
    // without an event id (never pre-checked: they always run).
    for (let i = 0; i < 30; i++) await publish(stream, { n: i }, `ev-${i}`);
    for (let i = 0; i < 10; i++) await publish(stream, { n: -i });
    for (let i = 0; i < 30; i++) await publish(stream, { n: i }, `ev-${i}`);
    // 64 ids per generation at 50%: "maybe" for about half to three quarters of never-seen ids,
    // and no id of the 30 forgotten (at least 64 later new ids would be needed).
    const filter = new SeenFilter({ expected: 64, falsePositiveRate: 0.5 });
    for (let i = 0; i < 1_000; i++) filter.add(`junk:${i}`);
    expect(measuredFalsePositiveRate(filter, 10_000, 'probe')).toBeGreaterThan(0.45);
    const done = new Set<string>(); // the handler's effect store: the authoritative read reads it
    const runs: string[] = [];
    const reads: string[] = [];
    const c = startConsumer<{ n: number }>({
      client,
      stream,
      group: 'g',
      consumer: 'c1',
      block: '100ms',
      concurrency: 8,
      // One event id's entries one at a time, in stream order: a repeat runs after its original.
      key: (d) => d.eventId ?? d.id,
      handler: (d) => {
        runs.push(d.eventId ?? `none:${d.event.n}`);
        if (d.eventId !== undefined) done.add(d.eventId);
      },
      preCheck: {
        filter,
        seen: async (eventId) => {
          reads.push(eventId);
          return done.has(eventId);
        },
      },
    });
    await until(() => c.consumer.stats.acked === 70);
    await c.stop();
    expect(c.consumer.stats.duplicates).toBe(30);
    expect(runs.filter((r) => r.startsWith('ev-')).sort()).toEqual([...done].sort());
    expect(done.size).toBe(30);
    expect(runs.filter((r) => r.startsWith('none:')).length).toBe(10);
    const o = outcomes(c.events);
    expect(o.filter((x) => x === 'read-seen').length).toBe(30);
    const falsePositives = o.filter((x) => x === 'read-unseen').length;
    const skipped = o.filter((x) => x === 'skipped').length;
    expect(falsePositives + skipped).toBe(30); // each event's first delivery
    expect(falsePositives).toBeGreaterThan(0); // the flood made some first deliveries read
    expect(skipped).toBeGreaterThan(0);
    expect(reads.length).toBe(30 + falsePositives);
  });

  it('a seen read that fails never holds an entry back: the handler runs, as without a pre-check', async () => {
    const stream = `${prefix}failing`;
    await publish(stream, { n: 1 }, 'ev-1');
    const filter = new SeenFilter({ expected: 10 });
    filter.add('ev-1'); // "maybe": the read is asked
    let fail = true;
    let handled = 0;
    const c = startConsumer<{ n: number }>({
      client,
      stream,
      group: 'g',
      consumer: 'c1',
      block: '100ms',
      claimIdle: '100ms',
      handler: () => void handled++,
      preCheck: {
        filter,
        seen: () => {
          if (fail) {
            fail = false;
            throw new Error('store down');
          }
          return false;
        },
      },
    });
    await until(() => c.consumer.stats.acked === 1);
    await c.stop();
    expect(c.consumer.stats.failed).toBe(0);
    expect(handled).toBe(1);
    expect(outcomes(c.events)).toEqual(['read-failed']);
    expect(fail).toBe(false);
  });

  it('refuses a preCheck with the ledger path, and a bad one, by name', () => {
    const base = {
      client,
      stream: `${prefix}bad`,
      group: 'g',
      consumer: 'c',
      signal: new AbortController().signal,
    };
    const filter = new SeenFilter({ expected: 10 });
    const cases: [object, string][] = [
      [
        {
          ledger: { ledger: createLedger({ capacity: 4 }) as never, entry: () => undefined as never },
          preCheck: { filter, seen: () => false },
        },
        'preCheck',
      ],
      [{ handler: () => {}, preCheck: { filter: {}, seen: () => false } }, 'preCheck.filter'],
      [{ handler: () => {}, preCheck: { filter } }, 'preCheck.seen'],
      [{ handler: () => {}, preCheck: { filter, seen: () => false, sen: 1 } }, 'preCheck.sen'],
    ];
    for (const [options, option] of cases) {
      let err: unknown;
      try {
        createStreamConsumer({ ...base, ...options } as never);
      } catch (e) {
        err = e;
      }
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
      expect((err as { option: string }).option).toBe(option);
    }
  });
});
