// The streams on an ioredis client with `keyPrefix`: ioredis prepends it to the keys of the
// commands its table names keys for (XADD, XRANGE, script KEYS ...), but not to XGROUP's or
// XINFO's. The producer, the consumer (handler and ledger paths, dead letters), retention, windows
// and the trimmed-past checks work on such a client as on a plain one, with every key they write
// under the keyPrefix (standalone and Cluster).
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import {
  checkReaderPosition,
  checkTrimmedPast,
  createStreamConsumer,
  createStreamProducer,
  parseDeadLetter,
  readWindow,
  type StreamConsumerOptions,
  startRetention,
  streamWindows,
  trimStream,
} from '../../src/streams/index.js';
import { keysMatching } from '../support/keys-matching.js';
import { prefixedTargets, runPrefix } from './redis-env.js';

const keyPrefix = runPrefix('streams-key-prefix');
// In every key name the tests make (not in the keyPrefix): a SCAN for it finds whatever they
// wrote, prefixed or not.
const tag = `skp${process.pid}x${Date.now().toString(36)}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(done: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) await sleep(10);
  expect(await done()).toBe(true);
}

/** Runs a consumer until `done()`, then stops it; its events. */
async function consume<E>(
  options: Omit<StreamConsumerOptions<E>, 'signal' | 'group' | 'consumer' | 'observer'>,
  done: (acked: number, deadLettered: number) => boolean | Promise<boolean>,
) {
  const controller = new AbortController();
  const errors: unknown[] = [];
  const consumer = createStreamConsumer<E>({
    group: 'g',
    consumer: 'c1',
    block: '100ms',
    ...options,
    signal: controller.signal,
    observer: (e) => {
      if (e.type === 'error') errors.push(e.error);
    },
  } as StreamConsumerOptions<E>);
  const run = consumer.run();
  await until(() => done(consumer.stats.acked, consumer.stats.deadLettered));
  controller.abort();
  await run;
  return { stats: consumer.stats, errors };
}

describe('streams on a client with keyPrefix', () => {
  const targets = prefixedTargets(keyPrefix);

  for (const { name, client, raw } of targets) {
    // A hash tag: on the Cluster the stream, its dedup record, dead letters and attempts share a slot.
    let n = 0;
    const newStream = () => `${name}:{${tag}-${++n}}`;

    it(`${name}: publish (idempotent), consume with a handler, dead letters of both sides`, async () => {
      const stream = newStream();
      const producer = createStreamProducer({ client, stream, retry: { attempts: 1 } });
      const first = await producer.publish({ n: 1 }, { id: 'e1' });
      expect(await producer.publish({ n: 1 }, { id: 'e1' })).toBe(first);
      await producer.publish({ n: 2 }, { id: 'e2' });
      expect(await raw.xlen(keyPrefix + stream)).toBe(2);
      // An entry the consumer cannot decode: dead-lettered at once.
      await raw.xadd(keyPrefix + stream, '*', 'e', 'not json', 'i', 'bad');

      const seen: unknown[] = [];
      const { errors } = await consume(
        {
          client,
          stream,
          handler: (d) => {
            seen.push(d.event);
          },
        },
        (acked, dead) => acked === 2 && dead === 1,
      );
      expect(errors).toEqual([]);
      expect(seen).toEqual([{ n: 1 }, { n: 2 }]);
      // The group is on the prefixed stream, with nothing pending.
      const groups = (await raw.call('XINFO', 'GROUPS', keyPrefix + stream)) as unknown[][];
      expect(groups.map((g) => [g[1], g[5]])).toEqual([['g', 0]]);
      const letters = await raw.xrange(`${keyPrefix}${stream}:dead`, '-', '+');
      expect(letters).toHaveLength(1);
      expect(parseDeadLetter(letters[0]?.[1] ?? [])).toMatchObject({ reason: 'terminal-error', id: 'bad' });

      // A terminal publish failure (the stream key holds a string): the producer's dead letter
      // goes to the prefixed dead-letter stream.
      const broken = newStream();
      await raw.set(keyPrefix + broken, 'not a stream');
      const failing = createStreamProducer({ client, stream: broken });
      await expect(failing.publish({ n: 3 }, { id: 'e3' })).rejects.toMatchObject({
        code: 'ERR_PUBLISH_FAILED',
        reason: 'terminal-error',
      });
      const publishLetters = await raw.xrange(`${keyPrefix}${broken}:dead`, '-', '+');
      expect(publishLetters).toHaveLength(1);
      expect(parseDeadLetter(publishLetters[0]?.[1] ?? [])).toMatchObject({ id: 'e3', kind: 'WRONGTYPE' });
      await Promise.all([producer.close(), failing.close()]);
    });

    it(`${name}: retention, windows and the trimmed-past checks read the prefixed stream`, async () => {
      const stream = newStream();
      // The group, created by the consumer's own path (on the prefixed stream: MKSTREAM).
      await consume(
        { client, stream, handler: () => {} },
        async () => (await raw.exists(keyPrefix + stream)) === 1,
      );
      for (const seq of [1, 2, 3, 4]) await client.xadd(stream, `1000-${seq}`, 'e', String(seq));
      await client.xadd(stream, '5000-1', 'e', '5');
      // It has read the first two entries and acked one: 1000-2 is pending.
      await client.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 2, 'STREAMS', stream, '>');
      await client.xack(stream, 'g', '1000-1');
      const before = await checkTrimmedPast(client, stream, 'g');
      expect(before).toMatchObject({ exists: true, behind: false });

      // The floor: the group's oldest pending entry.
      const trimmed = await trimStream({ client, stream, maxAge: '1h', groups: ['g'], mode: 'floor' });
      expect(trimmed).toMatchObject({ trimmed: 1, bound: 'pending', group: 'g' });
      expect(await raw.xlen(keyPrefix + stream)).toBe(4);
      const trims: number[] = [];
      const retention = startRetention({
        client,
        stream,
        maxAge: '1h',
        every: '1m',
        mode: 'floor',
        onTrim: (r) => trims.push(r.trimmed),
      });
      await until(() => trims.length === 1);
      await retention.stop();

      // Windows over the prefixed stream: the first ones were trimmed into (incomplete).
      const window = await readWindow({ client, stream, from: 5000, to: 6000 });
      expect(window.entries.map((e) => e.id)).toEqual(['5000-1']);
      expect(window.complete).toBe(true);
      const trimmedInto = await readWindow({ client, stream, from: 1000, to: 2000 });
      expect(trimmedInto.complete).toBe(false);
      const sizes: number[] = [];
      for await (const w of streamWindows({ client, stream, from: 4000, to: 6000, size: '1s' })) {
        sizes.push(w.entries.length);
      }
      expect(sizes).toEqual([0, 1]);

      // A plain reader that has read nothing: 1000-1 went before it got there.
      const reader = await checkReaderPosition(client, stream, { lastId: '0-1', entriesRead: 0 });
      expect(reader).toMatchObject({ exists: true, behind: true, missed: 1 });
      await raw.xtrim(keyPrefix + stream, 'MINID', '5000-1');
      expect(await checkTrimmedPast(client, stream, 'g')).toMatchObject({ exists: true, behind: true });
    });

    if (name === 'standalone') {
      it(`${name}: the ledger path books and acks on the prefixed keys`, async () => {
        const stream = newStream();
        const ledgerPrefix = `${tag}-ledger:`;
        const producer = createStreamProducer({ client, stream });
        for (const i of [1, 2, 3]) await producer.publish({ owner: 'p1', amount: i }, { id: `pay-${i}` });
        await producer.close();
        const { errors } = await consume<{ owner: string; amount: number }>(
          {
            client,
            stream,
            ledger: {
              capacity: 8,
              prefix: ledgerPrefix,
              entry: (d) => ({ owner: d.event.owner, signature: d.id, deltas: { coins: d.event.amount } }),
            },
          },
          (acked) => acked === 3,
        );
        expect(errors).toEqual([]);
        const ledger = createLedger({
          store: createRedisStore({ client, prefix: ledgerPrefix }),
          capacity: 8,
        });
        expect(await ledger.balances('p1')).toEqual({ coins: 6n });
        expect(await ledger.journal({ owner: 'p1' })).toHaveLength(3);
      });
    }

    it(`${name}: writes no key outside the keyPrefix`, async () => {
      const found = await keysMatching(raw, `*${tag}*`);
      expect(found.length).toBeGreaterThan(0);
      expect(found.filter((key) => !key.startsWith(keyPrefix))).toEqual([]);
    });
  }

  it('a reader with another keyPrefix than the client is refused up front', () => {
    const client = new Redis({ lazyConnect: true, keyPrefix: 'a:' });
    const reader = new Redis({ lazyConnect: true });
    try {
      expect(() =>
        createStreamConsumer({
          client,
          reader,
          stream: 's',
          group: 'g',
          consumer: 'c',
          handler: () => {},
          signal: new AbortController().signal,
        }),
      ).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_OPTION', message: expect.stringMatching(/reader/) }),
      );
    } finally {
      client.disconnect();
      reader.disconnect();
    }
  });
});
