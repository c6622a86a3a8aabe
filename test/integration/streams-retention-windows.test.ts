import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import type { TrimmedPastEvent } from '../../src/streams/trimmed-past.js';
import { readWindow, streamWindows } from '../../src/streams/windows.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

describe('windowed reads by time', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('streams-windows');
  let n = 0;
  const key = () => `${prefix}s${n++}`;
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  // Entries at t = 1000, 1000, 1500, 2000, 2999, 3000 ms (ids ms-seq), events with bigints.
  const T0 = 1_000;
  async function seed(stream: string): Promise<void> {
    const at = [1000, 1000, 1500, 2000, 2999, 3000];
    for (const [i, ms] of at.entries()) {
      const seq = i === 1 ? 1 : 0;
      const e = jsonSerializer.serialize({ n: i, amount: BigInt(i) * 10n ** 20n });
      await client.call('XADD', stream, `${ms}-${seq}`, 'e', e, 'i', `ev${i}`);
    }
  }

  it('reads [from, to) by the ids time, paged, events decoded', async () => {
    const s = key();
    await seed(s);
    const w = await readWindow({ client, stream: s, from: T0, to: 3000, pageSize: 2 });
    expect(w.entries.map((e) => e.id)).toEqual(['1000-0', '1000-1', '1500-0', '2000-0', '2999-0']);
    expect(w.entries[4]).toMatchObject({
      at: 2999,
      eventId: 'ev4',
      event: { n: 4, amount: 4n * 10n ** 20n },
    });
    expect(w).toMatchObject({ truncated: false, complete: true });
    const edge = await readWindow({ client, stream: s, from: 3000, to: 3001 });
    expect(edge.entries.map((e) => e.id)).toEqual(['3000-0']);
    expect((await readWindow({ client, stream: s, from: 2000, to: 2000 })).entries).toEqual([]);
  });

  it('reports an entry it cannot decode as such, per entry, and reads on', async () => {
    const s = key();
    await client.call('XADD', s, '1000-0', 'e', jsonSerializer.serialize({ n: 1 }), 'i', 'ev1');
    await client.call('XADD', s, '1001-0', 'e', '{not json', 'i', 'ev2');
    await client.call('XADD', s, '1002-0', 'payload', 'foreign', 'source', 'elsewhere');
    await client.call('XADD', s, '1003-0', 'e', jsonSerializer.serialize({ n: 4 }));
    const w = await readWindow({ client, stream: s, from: 0, to: 2000 });
    expect(w.entries.map((e) => [e.id, e.decoded])).toEqual([
      ['1000-0', true],
      ['1001-0', false],
      ['1002-0', false],
      ['1003-0', true],
    ]);
    const [first, bad, foreign, last] = w.entries;
    expect(first).toMatchObject({ decoded: true, event: { n: 1 }, eventId: 'ev1' });
    expect(bad).toMatchObject({
      decoded: false,
      problem: 'undecodable',
      eventId: 'ev2',
      fields: { e: '{not json' },
    });
    expect(bad?.decoded === false && bad.error).toBeInstanceOf(Error);
    expect(foreign).toMatchObject({
      decoded: false,
      problem: 'no-event',
      at: 1002,
      fields: { payload: 'foreign', source: 'elsewhere' },
    });
    expect(foreign && 'event' in foreign).toBe(false);
    expect(last).toMatchObject({ decoded: true, event: { n: 4 }, eventId: undefined });
  });

  it('is bounded by count, and says it was cut', async () => {
    const s = key();
    await seed(s);
    const w = await readWindow({ client, stream: s, from: 0, to: 10_000, count: 4, pageSize: 3 });
    expect(w.entries.map((e) => e.id)).toEqual(['1000-0', '1000-1', '1500-0', '2000-0']);
    expect(w.truncated).toBe(true);
    const whole = await readWindow({ client, stream: s, from: 0, to: 10_000, count: 6, pageSize: 3 });
    expect(whole).toMatchObject({ truncated: false });
    expect(whole.entries).toHaveLength(6);
  });

  it('a window the stream was trimmed into is reported incomplete (trimmed-past), never silently short', async () => {
    const s = key();
    await seed(s);
    await client.call('XTRIM', s, 'MINID', '2000-0');
    const events: TrimmedPastEvent[] = [];
    const w = await readWindow({
      client,
      stream: s,
      from: T0,
      to: 3000,
      onTrimmedPast: (e) => events.push(e),
    });
    expect(w.entries.map((e) => e.id)).toEqual(['2000-0', '2999-0']);
    expect(w.complete).toBe(false);
    expect(events).toMatchObject([{ type: 'trimmed-past', stream: s, firstId: '2000-0', gapMs: 1000 }]);
    // A window after the trim point lost nothing.
    expect((await readWindow({ client, stream: s, from: 2000, to: 3000 })).complete).toBe(true);
    // A missing stream is an empty, whole window.
    expect(await readWindow({ client, stream: key(), from: 0, to: 10 })).toMatchObject({
      entries: [],
      complete: true,
    });
  });

  it('tumbling and sliding windows over the stream', async () => {
    const s = key();
    await seed(s);
    const tumbling = [];
    for await (const w of streamWindows({ client, stream: s, from: 1000, to: 3001, size: '1s' })) {
      tumbling.push([w.from, w.entries.map((e) => e.id)]);
    }
    expect(tumbling).toEqual([
      [1000, ['1000-0', '1000-1', '1500-0']],
      [2000, ['2000-0', '2999-0']],
      [3000, ['3000-0']],
    ]);
    const sliding = [];
    for await (const w of streamWindows({
      client,
      stream: s,
      from: 1000,
      to: 2500,
      size: '1s',
      step: '500ms',
    })) {
      sliding.push([w.from, w.to, w.entries.length]);
    }
    expect(sliding).toEqual([
      [1000, 2000, 3],
      [1500, 2500, 2],
      [2000, 3000, 2],
    ]);
  });

  it('refuses bad arguments by name', async () => {
    await expect(readWindow({ client, stream: key(), from: 10, to: 5 })).rejects.toMatchObject({
      path: 'to',
    });
    await expect(readWindow({ client, stream: key(), from: -1, to: 5 })).rejects.toMatchObject({
      path: 'from',
    });
    await expect(readWindow({ client, stream: key(), from: 0, to: 5, count: 0 })).rejects.toMatchObject({
      option: 'count',
    });
    const gen = streamWindows({ client, stream: key(), from: 0, to: 5, size: '1s', step: '2s' });
    await expect(gen.next()).rejects.toMatchObject({ option: 'step' });
  });
});
