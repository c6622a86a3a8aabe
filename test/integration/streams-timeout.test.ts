// Every call of the streams code has a bounded wait (`timeout`, default 10 s, as the Redis
// store's), and a failure says what it did: a command never sent (the client never connected) is
// `not-applied`, one sent with no reply `unknown`. Against a dead port and a server that accepts
// and never answers; and a blocking read waits longer than its `block`. A durable publish that
// too few replicas confirmed is dead-lettered with the kind `not-replicated`.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkReaderPosition,
  checkTrimmedPast,
  createStreamConsumer,
  createStreamProducer,
  parseDeadLetter,
  readWindow,
  type StreamConsumerEvent,
  type StreamProducerOptions,
  trimStream,
} from '../../src/streams/index.js';
import { freePort } from '../../src/testing/index.js';
import { quietClients } from '../support/quiet-clients.js';
import { silentServer } from '../support/silent-server.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const prefix = runPrefix('streams-timeout');

/** What a call's rejection says, and how long it took (ms). */
async function failure(call: () => Promise<unknown>): Promise<{
  code: unknown;
  outcome: unknown;
  retriable: unknown;
  cause: unknown;
  ms: number;
}> {
  const start = performance.now();
  const err = (await call().then(
    () => undefined,
    (e: unknown) => e,
  )) as { code?: unknown; outcome?: unknown; retriable?: unknown; cause?: unknown } | undefined;
  return {
    code: err?.code,
    outcome: err?.outcome,
    retriable: err?.retriable,
    cause: err?.cause,
    ms: performance.now() - start,
  };
}

// Two tries 10 ms apart, then the dead letter's three: the test waits for the timeouts, not for
// the default backoff.
const quick = { attempts: 2, base: '10ms', max: '10ms' } as const;
// Without and with `durability` (its script and WAIT in one pipeline of the bounded client).
const durabilities: Partial<StreamProducerOptions>[] = [{}, { durability: { replicas: 1, timeout: '50ms' } }];

describe('streams: a bounded wait on every call', () => {
  const { client, disconnectAll } = quietClients();
  afterAll(async () => {
    disconnectAll();
    const cleanup = new Redis(REDIS_URL);
    await cleanupPrefix(cleanup, prefix);
    cleanup.disconnect();
  });

  /** Every streams call on `c`, each as its failure. */
  async function everyCall(c: Redis, producer: Partial<StreamProducerOptions>) {
    const stream = `${prefix}{s}`;
    const publish = createStreamProducer({ client: c, stream, retry: quick, timeout: '300ms', ...producer });
    const published = failure(() => publish.publish({ n: 1 }, { id: 'e1' }));
    const consumer = createStreamConsumer({
      client: c,
      stream,
      group: 'g',
      consumer: 'c1',
      handler: () => {},
      signal: new AbortController().signal,
      timeout: '300ms',
    });
    const results = {
      publish: await published,
      consume: await failure(() => consumer.run()),
      trimFloor: await failure(() =>
        trimStream({ client: c, stream, maxAge: '1h', mode: 'floor', timeout: '300ms' }),
      ),
      trimAuto: await failure(() => trimStream({ client: c, stream, maxAge: '1h', timeout: '300ms' })),
      window: await failure(() => readWindow({ client: c, stream, from: 0, to: 1000, timeout: '300ms' })),
      trimmedPast: await failure(() => checkTrimmedPast(c, stream, 'g', { timeout: '300ms' })),
      reader: await failure(() => checkReaderPosition(c, stream, { lastId: '0-1' }, { timeout: '300ms' })),
    };
    await publish.close();
    return results;
  }

  for (const lazyConnect of [false, true]) {
    it(`a dead port (lazyConnect: ${lazyConnect}): not-applied, within the timeout`, async () => {
      const port = await freePort();
      for (const durable of durabilities) {
        const r = await everyCall(client({ port, lazyConnect }), durable);
        // The publish and its dead letter were never sent: the event is certainly in neither stream.
        expect(r.publish).toMatchObject({ code: 'ERR_DEAD_LETTER_FAILED', outcome: 'not-applied' });
        for (const other of [r.consume, r.trimFloor, r.trimAuto, r.window, r.trimmedPast, r.reader]) {
          expect(other).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
        }
        // The waits are 300 ms each (the publish: 2 tries and 3 dead-letter tries); the bound is
        // generous for a loaded machine, and far below ioredis's own ~73 s for a client that
        // never connects.
        for (const one of Object.values(r)) expect(one.ms).toBeLessThan(10_000);
      }
    }, 60_000);
  }

  it('a dead port with the default timeout: the publish gives up after about 10 s, not-applied', async () => {
    const port = await freePort();
    const producer = createStreamProducer({
      client: client({ port }),
      stream: `${prefix}{default}`,
      retry: { attempts: 1 },
      deadLetter: false,
    });
    const r = await failure(() => producer.publish({ n: 1 }, { id: 'e1' }));
    expect(r).toMatchObject({ code: 'ERR_PUBLISH_FAILED', outcome: 'not-applied' });
    expect(r.ms).toBeGreaterThanOrEqual(9_900);
    expect(r.ms).toBeLessThan(30_000);
  }, 40_000);

  it('a server that accepts and never answers: not-applied before it is ready, unknown once a command was sent', async () => {
    const silent = await silentServer();
    try {
      // The ready check (INFO) is never answered: the client never becomes ready, nothing is sent.
      const unready = await everyCall(client({ port: silent.port }), {});
      expect(unready.publish).toMatchObject({ code: 'ERR_DEAD_LETTER_FAILED', outcome: 'not-applied' });
      expect(unready.consume).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied' });
      expect(unready.trimFloor).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied' });
      // No ready check and no CLIENT SETINFO (ioredis waits for its answer): ready once
      // connected, so a command is written, and may have run.
      const readyClient = () => {
        const c = client({ port: silent.port, enableReadyCheck: false, disableClientInfo: true });
        return c;
      };
      for (const durable of durabilities) {
        const c = readyClient();
        for (let i = 0; i < 500 && c.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 10));
        expect(c.status).toBe('ready');
        const ready = await everyCall(c, durable);
        expect(ready.publish).toMatchObject({ code: 'ERR_DEAD_LETTER_FAILED', outcome: 'unknown' });
        // Creating the group is a write: it may have run. The trim too (its script).
        expect(ready.consume).toMatchObject({ code: 'ERR_STORE', outcome: 'unknown', retriable: true });
        expect(ready.trimFloor).toMatchObject({ code: 'ERR_STORE', outcome: 'unknown', retriable: true });
        // Reads change nothing, whatever happened to them.
        for (const read of [ready.trimAuto, ready.window, ready.trimmedPast, ready.reader]) {
          expect(read).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied' });
        }
        for (const one of Object.values(ready)) expect(one.ms).toBeLessThan(10_000);
      }
    } finally {
      await silent.close();
    }
  }, 60_000);

  it('a blocking read waits its `block` on top of the timeout: no read fails while it waits, and a late entry is delivered', async () => {
    const c = client({ host: new URL(REDIS_URL).hostname, port: Number(new URL(REDIS_URL).port || 6379) });
    const stream = `${prefix}{block}`;
    const controller = new AbortController();
    const events: StreamConsumerEvent[] = [];
    const seen: unknown[] = [];
    const consumer = createStreamConsumer({
      client: c,
      stream,
      group: 'g',
      consumer: 'c1',
      block: '1s',
      timeout: '200ms',
      handler: (d) => {
        seen.push(d.event);
      },
      signal: controller.signal,
      observer: (e) => events.push(e),
    });
    const run = consumer.run();
    // Two whole blocking reads with nothing to read (each waits 1 s, 5 times the timeout).
    await new Promise((r) => setTimeout(r, 2_500));
    await c.xadd(stream, '*', 'e', JSON.stringify({ n: 1 }));
    for (let i = 0; i < 1_000 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    await run;
    expect(seen).toEqual([{ n: 1 }]);
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
  }, 30_000);
});

describe('a durable publish too few replicas confirmed', () => {
  it("is dead-lettered with the kind 'not-replicated', its outcome unknown (the master wrote it)", async () => {
    const c = new Redis(REDIS_URL);
    const stream = `${prefix}{short}`;
    try {
      // The test server has no replica: WAIT answers 0 of 1 after 20 ms, every try.
      const producer = createStreamProducer({
        client: c,
        stream,
        retry: quick,
        durability: { replicas: 1, timeout: '20ms' },
      });
      const r = await failure(() => producer.publish({ n: 1 }, { id: 'e1' }));
      expect(r).toMatchObject({ code: 'ERR_PUBLISH_FAILED', outcome: 'unknown' });
      expect(r.cause).toMatchObject({ code: 'ERR_NOT_REPLICATED' });
      const letters = await c.xrange(`${stream}:dead`, '-', '+');
      expect(letters).toHaveLength(1);
      expect(parseDeadLetter(letters[0]?.[1] ?? [])).toMatchObject({ id: 'e1', kind: 'not-replicated' });
      // The master has it: the event may be in both streams, as `outcome: 'unknown'` says.
      expect(await c.xlen(stream)).toBe(1);
      await producer.close();
    } finally {
      c.disconnect();
    }
  });
});
