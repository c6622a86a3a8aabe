// The stream consumer's counts and backlog reports on the real Redis: `delivered` and `acked`
// events add up to the entries run, `reclaimed` counts a dead consumer's entries taken over, and
// the `lag` event every `statsInterval` carries the group's pending count and lag (XINFO GROUPS),
// both 0 once the stream is drained.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { scripts } from '../../src/redis/scripts.generated.js';
import {
  createStreamConsumer,
  type StreamClient,
  type StreamConsumerEvent,
  type StreamConsumerOptions,
} from '../../src/streams/consumer.js';
import { startConsumer } from '../support/consumer-run.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (done: () => boolean, ms = 10_000) => {
  const end = performance.now() + ms;
  while (!done() && performance.now() < end) await sleep(10);
  expect(done()).toBe(true);
};

const client = new Redis(REDIS_URL);
const prefix = runPrefix('streams-consumer-stats');
let n = 0;
const newStream = () => `${prefix}s${++n}`;

afterAll(async () => {
  await cleanupPrefix(client, prefix);
  client.disconnect();
});

async function publish(stream: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await client.xadd(stream, '*', 'e', jsonSerializer.serialize({ i }));
}

/** The sum of the counts of the events of `type`. */
const total = (events: readonly StreamConsumerEvent[], type: 'delivered' | 'acked' | 'reclaimed') =>
  events.reduce((sum, e) => sum + (e.type === type ? e.count : 0), 0);
const lags = (events: readonly StreamConsumerEvent[]) =>
  events.flatMap((e) => (e.type === 'lag' ? [{ pending: e.pending, lag: e.lag }] : []));

// XINFO GROUPS has `lag` from Redis 7.0: before it, the event says it cannot tell.
const lagKnown = async () => {
  const info = (await client.info('server')).match(/redis_version:(\d+)/);
  return Number(info?.[1] ?? 0) >= 7;
};

type Options = Omit<
  StreamConsumerOptions<{ i: number }>,
  'client' | 'signal' | 'group' | 'consumer' | 'observer'
>;
const start = (options: Options & { consumer?: string; client?: StreamClient }) =>
  startConsumer<{ i: number }>({
    client,
    group: 'g',
    consumer: 'c1',
    block: '100ms',
    ...options,
  } as Parameters<typeof startConsumer<{ i: number }>>[0]);

describe('stream consumer counts and backlog', () => {
  it('reports delivered and acked counts matching the entries, and pending and lag down to 0 once drained', async () => {
    const stream = newStream();
    await publish(stream, 10);
    let open = (): void => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // One handler and batches of 2: the consumer holds 3 entries at most (holdLimits), so while
    // the gate is shut 3 are pending and 7 not delivered to the group yet.
    const c = start({ stream, concurrency: 1, batch: 2, statsInterval: '200ms', handler: () => gate });
    const known = await lagKnown();
    await until(() => lags(c.events).some((l) => l.pending === 3));
    expect(lags(c.events).find((l) => l.pending === 3)).toEqual({ pending: 3, lag: known ? 7 : undefined });
    open();
    await until(() => c.consumer.stats.acked === 10);
    const drained = { pending: 0, lag: known ? 0 : undefined };
    // Only a report after every entry was acked can say 0 and 0; every later one says so too.
    await until(() => lags(c.events).some((l) => l.pending === 0 && l.lag === drained.lag));
    await c.stop();
    expect(lags(c.events).at(-1)).toEqual(drained);
    expect(total(c.events, 'delivered')).toBe(10);
    expect(total(c.events, 'acked')).toBe(10);
    expect(c.consumer.stats).toMatchObject({ delivered: 10, acked: 10 });
    expect(total(c.events, 'reclaimed')).toBe(0);
    expect(c.events.filter((e) => e.type === 'error')).toEqual([]);
  });

  it("counts a dead consumer's entries it took over as reclaimed (and delivered)", async () => {
    const stream = newStream();
    await client.call('XGROUP', 'CREATE', stream, 'g', '0', 'MKSTREAM');
    await publish(stream, 3);
    await client.call('XREADGROUP', 'GROUP', 'g', 'dead', 'COUNT', 10, 'STREAMS', stream, '>');
    const c = start({ stream, consumer: 'alive', claimIdle: 150, statsInterval: 0, handler: () => {} });
    await until(() => c.consumer.stats.acked === 3);
    await c.stop();
    expect(total(c.events, 'reclaimed')).toBe(3);
    expect(total(c.events, 'delivered')).toBe(3);
    expect(total(c.events, 'acked')).toBe(3);
    // statsInterval 0: no backlog reports at all.
    expect(lags(c.events)).toEqual([]);
  });

  it("reads the backlog of the stream under the client's keyPrefix (a script's KEYS are prefixed)", async () => {
    const prefixed = new Redis(REDIS_URL, { keyPrefix: `${prefix}kp:` });
    try {
      for (let i = 0; i < 3; i++) await prefixed.xadd('s', '*', 'e', jsonSerializer.serialize({ i }));
      const c = start({ stream: 's', client: prefixed, statsInterval: '100ms', handler: () => {} });
      const known = await lagKnown();
      // Unprefixed, the script would find no stream and report nothing.
      await until(() => lags(c.events).some((l) => l.pending === 0 && l.lag === (known ? 0 : undefined)));
      await c.stop();
      expect(total(c.events, 'acked')).toBe(3);
    } finally {
      prefixed.disconnect();
    }
  });

  it('reports a failed backlog read as an error of operation stats, and goes on', async () => {
    const stream = newStream();
    await publish(stream, 2);
    const failing: StreamClient = {
      call: (command, ...args) =>
        args[0] === scripts.streamGroupStats.sha1 || args[0] === scripts.streamGroupStats.text
          ? Promise.reject(new Error('stats refused'))
          : client.call(command, ...args),
      duplicate: () => client.duplicate(),
    };
    const c = start({ stream, client: failing, statsInterval: '100ms', handler: () => {} });
    await until(() => c.events.some((e) => e.type === 'error' && e.operation === 'stats'));
    await until(() => c.consumer.stats.acked === 2);
    await c.stop();
    expect(lags(c.events)).toEqual([]);
    expect(c.events.filter((e) => e.type === 'error' && e.operation !== 'stats')).toEqual([]);
  });

  it('refuses a statsInterval below 100 ms (but 0) or past the timer limit, by name', () => {
    const base = { client, stream: 's', group: 'g', consumer: 'c', signal: new AbortController().signal };
    const make = (statsInterval: unknown) =>
      createStreamConsumer({ ...base, handler: () => {}, statsInterval } as StreamConsumerOptions);
    for (const bad of ['50ms', 99, -1, '30d', 'soon']) expect(() => make(bad)).toThrow(/`statsInterval`/);
    for (const good of [0, '100ms', '5s']) expect(() => make(good)).not.toThrow();
  });
});
