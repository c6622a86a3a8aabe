// Every options object of onceflow/streams' public surface refuses a key it does not know (a
// JavaScript caller's typo would otherwise change nothing and say nothing): a typed error naming
// the key, with a did-you-mean, before any call reaches Redis.
import { describe, expect, it } from 'vitest';
// Not exported (the producer's encoding of a dead letter), still an entry point of its own.
import { deadLetterFields } from './dead-letter.js';
import {
  checkReaderPosition,
  checkTrimmedPast,
  createStreamConsumer,
  createStreamProducer,
  readWindow,
  startRetention,
  streamWindows,
  trimStream,
} from './index.js';

let calls = 0;
const client = {
  call: async () => {
    calls++;
    throw new Error('no call was expected');
  },
  duplicate: () => client,
};
const signal = new AbortController().signal;
const consumer = { client, stream: 's', group: 'g', consumer: 'c', signal, handler: () => {} };
const ledger = { capacity: 4, entry: () => null };
const { handler: _handler, ...base } = consumer;

// [what, the call, the option the error names, the key it suggests]
const cases: [string, () => unknown, string, string | undefined][] = [
  [
    'producer',
    () => createStreamProducer({ client, stream: 's', maxEventByte: 1 } as never),
    'maxEventByte',
    'maxEventBytes',
  ],
  [
    'producer dedup',
    () => createStreamProducer({ client, stream: 's', dedup: { windw: '1m' } } as never),
    'dedup.windw',
    'window',
  ],
  [
    'producer retry',
    () => createStreamProducer({ client, stream: 's', retry: { atempts: 3 } } as never),
    'retry.atempts',
    'attempts',
  ],
  [
    'producer deadLetter',
    () => createStreamProducer({ client, stream: 's', deadLetter: { strem: 'x' } } as never),
    'deadLetter.strem',
    'stream',
  ],
  [
    'producer backlog',
    () => createStreamProducer({ client, stream: 's', backlog: { maxEvent: 1 } } as never),
    'backlog.maxEvent',
    'maxEvents',
  ],
  [
    'publish',
    () => createStreamProducer({ client, stream: 's' }).publish(1, { idd: 'x' } as never),
    'options.idd',
    'id',
  ],
  [
    'consumer',
    () => createStreamConsumer({ ...consumer, claimIdel: '1s' } as never),
    'claimIdel',
    'claimIdle',
  ],
  [
    'consumer deadLetter',
    () => createStreamConsumer({ ...consumer, deadLetter: { steam: 'd' } } as never),
    'deadLetter.steam',
    'stream',
  ],
  [
    'ledger path',
    () =>
      createStreamConsumer({ ...consumer, handler: undefined, ledger: { ...ledger, horizn: true } } as never),
    'ledger.horizn',
    'horizon',
  ],
  [
    'ledger path journal',
    () =>
      createStreamConsumer({
        ...consumer,
        handler: undefined,
        ledger: { ...ledger, journal: { maxEntries: 3 } },
      } as never),
    'ledger.journal.maxEntries',
    undefined,
  ],
  [
    'trimStream',
    () => trimStream({ client, stream: 's', maxAge: '1h', aproximate: true } as never),
    'aproximate',
    'approximate',
  ],
  [
    'startRetention',
    () => startRetention({ client, stream: 's', maxAge: '1h', every: '1m', onTirm: () => {} } as never),
    'onTirm',
    'onTrim',
  ],
  [
    'readWindow',
    () => readWindow({ client, stream: 's', from: 0, to: 1, pagesize: 10 } as never),
    'pagesize',
    'pageSize',
  ],
  [
    'streamWindows',
    () => streamWindows({ client, stream: 's', from: 0, to: 1, size: '1s', stepp: '1s' } as never).next(),
    'stepp',
    'step',
  ],
  [
    'checkTrimmedPast',
    () => checkTrimmedPast(client, 's', 'g', { pendingcap: 5 } as never),
    'options.pendingcap',
    'pendingCap',
  ],
  [
    'checkReaderPosition',
    () => checkReaderPosition(client, 's', { lastId: '0-0', entriesread: 1 } as never),
    'position.entriesread',
    'entriesRead',
  ],
  [
    'producer timeout',
    () => createStreamProducer({ client, stream: 's', timout: '1s' } as never),
    'timout',
    'timeout',
  ],
  [
    'consumer timeout',
    () => createStreamConsumer({ ...consumer, timeot: '1s' } as never),
    'timeot',
    'timeout',
  ],
  [
    'trimStream timeout',
    () => trimStream({ client, stream: 's', maxAge: '1h', timeOut: '1s' } as never),
    'timeOut',
    'timeout',
  ],
  [
    'checkReaderPosition options',
    () => checkReaderPosition(client, 's', { lastId: '0-0' }, { timout: '1s' } as never),
    'options.timout',
    'timeout',
  ],
  // A timeout is one timer's wait: positive, at most 2^31 - 1 ms.
  [
    'producer timeout 0',
    () => createStreamProducer({ client, stream: 's', timeout: 0 }),
    'timeout',
    undefined,
  ],
  [
    'consumer timeout past a timer',
    () => createStreamConsumer({ ...consumer, timeout: 2 ** 31 }),
    'timeout',
    undefined,
  ],
  [
    'startRetention timeout',
    () => startRetention({ client, stream: 's', maxAge: '1h', every: '1m', timeout: 0 }),
    'timeout',
    undefined,
  ],
  [
    'readWindow timeout',
    () => readWindow({ client, stream: 's', from: 0, to: 1, timeout: '30d' }),
    'timeout',
    undefined,
  ],
  [
    'deadLetterFields',
    () =>
      deadLetterFields({
        reason: 'terminal-error',
        attempts: 1,
        firstError: '',
        lastError: '',
        origin: 'o',
        event: '1',
        eventId: 'x',
      } as never),
    'letter.eventId',
    undefined,
  ],
];

describe('streams options refuse unknown keys', () => {
  it.each(cases)('%s', async (_what, call, option, near) => {
    let caught: unknown;
    try {
      await call();
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ code: 'ERR_INVALID_OPTION', option });
    if (near !== undefined) expect((caught as Error).message).toContain(`did you mean \`${near}\`?`);
  });

  it('reached no Redis call on the way', () => {
    expect(calls).toBe(0);
  });

  it('every known key is still accepted (the lists match the option types)', () => {
    const p = createStreamProducer({
      client,
      stream: 's',
      name: 'n',
      id: () => 'x',
      dedup: { window: '1m', maxIds: 10 },
      retry: { attempts: 2, base: 10, max: 20 },
      deadLetter: { stream: 'd' },
      backlog: { maxEvents: 10, maxBytes: 1000 },
      maxEventBytes: 100,
      signal,
      observer: () => {},
      random: Math.random,
      timeout: '1s',
    });
    expect(p.backlog()).toEqual({ events: 0, bytes: 0 });
    createStreamConsumer({
      ...consumer,
      reader: client,
      concurrency: 2,
      claimIdle: '1s',
      maxDeliveries: 2,
      key: () => 'k',
      block: '1s',
      batch: 2,
      deadLetter: { stream: 'd' },
      from: '0',
      serializer: { serialize: String, deserialize: String },
      observer: () => {},
      timeout: '1s',
    });
    createStreamConsumer({
      ...base,
      ledger: { ...ledger, name: 'l', horizon: true, prefix: 'p:', journal: { maxEntriesPerOwner: 5 } },
    });
    const r = startRetention({
      client,
      stream: 's',
      maxAge: '1h',
      every: '1m',
      groups: ['g'],
      approximate: true,
      limit: 5,
      mode: 'floor',
      signal,
      onTrim: () => {},
      onError: () => {},
      timeout: '1s',
    });
    return r.stop();
  });
});
