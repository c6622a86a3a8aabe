import { describe, expect, it } from 'vitest';
import { createMemoryUserStreams } from './user-streams-memory.js';

const SESSION = 'session-aaaaaaaaaaaa';

function fakeClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('memory user streams', () => {
  it('offsets 1, 2, 3 in one epoch; a read pages with no gap and no repeat', async () => {
    const s = createMemoryUserStreams();
    const first = await s.publish('u1', 'chat.msg', { n: 1 });
    expect(first.offset).toBe(1);
    for (let n = 2; n <= 7; n++) expect((await s.publish('u1', 'chat.msg', { n })).offset).toBe(n);
    const seen: number[] = [];
    let from = { offset: 0, epoch: first.epoch };
    for (;;) {
      const page = await s.read('u1', from, 3);
      expect(page.recovered).toBe(true);
      expect(page.end).toBe(7);
      if (page.messages.length === 0) break;
      for (const m of page.messages) seen.push((m.body as { n: number }).n);
      from = { offset: page.messages.at(-1)?.offset ?? 0, epoch: first.epoch };
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('no position, another epoch, or an offset past the end: not recovered, nothing sent, end given', async () => {
    const s = createMemoryUserStreams();
    const { epoch } = await s.publish('u1', 't', 1);
    await s.publish('u1', 't', 2);
    for (const from of [undefined, { offset: 0, epoch: 'other' }, { offset: 3, epoch }]) {
      expect(await s.read('u1', from, 10)).toEqual({ epoch, end: 2, recovered: false, messages: [] });
    }
    // The end itself recovers, with nothing to send.
    expect(await s.read('u1', { offset: 2, epoch }, 10)).toEqual({
      epoch,
      end: 2,
      recovered: true,
      messages: [],
    });
  });

  it('maxLength dropping the message after the offset: not recovered; the one at the offset may go', async () => {
    const s = createMemoryUserStreams({ maxLength: 3 });
    const { epoch } = await s.publish('u1', 't', 1);
    for (let n = 2; n <= 5; n++) await s.publish('u1', 't', n);
    // Held: 3, 4, 5.
    expect((await s.read('u1', { offset: 1, epoch }, 10)).recovered).toBe(false);
    expect((await s.read('u1', { offset: 1, epoch }, 10)).messages).toEqual([]);
    const r = await s.read('u1', { offset: 2, epoch }, 10);
    expect(r.recovered).toBe(true);
    expect(r.messages.map((m) => m.offset)).toEqual([3, 4, 5]);
  });

  it('maxAgeMs drops old messages by the clock; an idle stream past its ttl gets a new epoch', async () => {
    const clock = fakeClock();
    const s = createMemoryUserStreams({ maxAgeMs: 1000, sessionTtlMs: 5000, now: clock.now });
    const { epoch } = await s.publish('u1', 't', 1);
    clock.advance(600);
    await s.publish('u1', 't', 2);
    clock.advance(400);
    // Message 1 is 1000 ms old: gone; 2 is 400 ms old: kept.
    expect((await s.read('u1', { offset: 0, epoch }, 10)).recovered).toBe(false);
    expect((await s.read('u1', { offset: 1, epoch }, 10)).messages.map((m) => m.offset)).toEqual([2]);
    clock.advance(5000);
    const after = await s.read('u1', { offset: 2, epoch }, 10);
    expect(after.epoch).not.toBe(epoch);
    expect(after).toMatchObject({ end: 0, recovered: false, messages: [] });
  });

  it('a lost store (a new instance) gives a new epoch and recovered: false', async () => {
    const { epoch } = await createMemoryUserStreams().publish('u1', 't', 1);
    const r = await createMemoryUserStreams().read('u1', { offset: 1, epoch }, 10);
    expect(r.epoch).not.toBe(epoch);
    expect(r.recovered).toBe(false);
  });

  it('an acked position never moves back within an epoch, a new epoch replaces it, and it expires', async () => {
    const clock = fakeClock();
    const s = createMemoryUserStreams({ sessionTtlMs: 1000, now: clock.now });
    expect(await s.position(SESSION)).toBeUndefined();
    await s.ackPosition(SESSION, 'u1', { offset: 5, epoch: 'e1' });
    expect(await s.ackPosition(SESSION, 'u1', { offset: 3, epoch: 'e1' })).toEqual({
      user: 'u1',
      offset: 5,
      epoch: 'e1',
    });
    expect(await s.ackPosition(SESSION, 'u1', { offset: 2, epoch: 'e2' })).toEqual({
      user: 'u1',
      offset: 2,
      epoch: 'e2',
    });
    clock.advance(999);
    expect(await s.position(SESSION)).toEqual({ user: 'u1', offset: 2, epoch: 'e2' });
    clock.advance(1);
    expect(await s.position(SESSION)).toBeUndefined();
  });

  it('bad input: typed errors, no state changed', async () => {
    const s = createMemoryUserStreams({ maxBodyBytes: 100 });
    const { epoch } = await s.publish('u1', 't', 1);
    const bad: [() => Promise<unknown>, string][] = [
      [() => s.publish('', 't', 1), 'ERR_INVALID_ARGUMENT'],
      [() => s.publish('x'.repeat(257), 't', 1), 'ERR_INVALID_ARGUMENT'],
      [() => s.publish('u1', '1bad', 1), 'ERR_INVALID_ARGUMENT'],
      [() => s.publish('u1', 't', 'x'.repeat(200)), 'ERR_INVALID_ARGUMENT'],
      [() => s.publish('u1', 't', { __proto__: null, f: () => 1 } as never), 'ERR_INVALID_ARGUMENT'],
      [() => s.publish('u1', 't', Number.NaN), 'ERR_INVALID_ARGUMENT'],
      [() => s.read('u1', { offset: -1, epoch }, 1), 'ERR_INVALID_ARGUMENT'],
      [() => s.read('u1', { offset: 0, epoch, extra: 1 } as never, 1), 'ERR_INVALID_ARGUMENT'],
      [() => s.read('u1', undefined, 0), 'ERR_INVALID_ARGUMENT'],
      [() => s.read('u1', undefined, 257), 'ERR_INVALID_ARGUMENT'],
      [() => s.ackPosition('short', 'u1', { offset: 1, epoch }), 'ERR_INVALID_ARGUMENT'],
      [() => s.ackPosition(SESSION, 'u1', { offset: 1.5, epoch }), 'ERR_INVALID_ARGUMENT'],
      [() => s.ackPosition(SESSION, 'u1', { offset: 1, epoch: 'a b' }), 'ERR_INVALID_ARGUMENT'],
    ];
    for (const [call, code] of bad) await expect(call()).rejects.toMatchObject({ code });
    expect(await s.read('u1', { offset: 0, epoch }, 10)).toMatchObject({ end: 1, recovered: true });
    expect(await s.position(SESSION)).toBeUndefined();
  });

  it('options: an unknown key is refused with did-you-mean; bounds are checked', () => {
    expect(() => createMemoryUserStreams({ maxLenght: 3 } as never)).toThrow(/did you mean `maxLength`/);
    expect(() => createMemoryUserStreams({ maxLength: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION' }),
    );
    expect(() => createMemoryUserStreams({ sessionTtlMs: 604_800_001 })).toThrow(/sessionTtlMs/);
    expect(() => createMemoryUserStreams({ maxBodyBytes: 1 << 20 })).toThrow(/maxBodyBytes/);
    expect(() => createMemoryUserStreams({ now: 5 as never })).toThrow(/now.*a function returning ms/);
  });

  it('a publish retried with its id (after a lost reply) appends once and answers the first position', async () => {
    const s = createMemoryUserStreams();
    const first = await s.publish('u1', 'order.shipped', { n: 1 }, { id: 'order-881:shipped' });
    const retry = await s.publish('u1', 'order.shipped', { n: 1 }, { id: 'order-881:shipped' });
    expect(retry).toEqual(first);
    // The id is the user's: another user's publish with it appends.
    expect((await s.publish('u2', 't', 0, { id: 'order-881:shipped' })).offset).toBe(1);
    expect((await s.publish('u1', 't', 2, { id: 'other' })).offset).toBe(2);
    expect((await s.publish('u1', 't', 3)).offset).toBe(3);
    const r = await s.read('u1', { offset: 0, epoch: first.epoch }, 10);
    expect(r.messages.map((m) => m.body)).toEqual([{ n: 1 }, 2, 3]);
  });

  it('the dedup window: the last publishDedup ids of the epoch; a new epoch forgets them', async () => {
    const clock = fakeClock();
    const s = createMemoryUserStreams({ publishDedup: 2, maxLength: 1, sessionTtlMs: 5000, now: clock.now });
    const a = await s.publish('u1', 't', 1, { id: 'a' });
    await s.publish('u1', 't', 2, { id: 'b' });
    await s.publish('u1', 't', 3);
    // Retention dropped message 1 (maxLength 1), not its id: a retry still answers offset 1.
    expect(await s.publish('u1', 't', 1, { id: 'a' })).toEqual(a);
    await s.publish('u1', 't', 4, { id: 'c' });
    // 'a' left the window (b, c are the last two ids): it appends again.
    expect(await s.publish('u1', 't', 1, { id: 'a' })).toEqual({ epoch: a.epoch, offset: 5 });
    expect((await s.publish('u1', 't', 4, { id: 'c' })).offset).toBe(4);
    clock.advance(5000);
    const fresh = await s.publish('u1', 't', 4, { id: 'c' });
    expect(fresh.epoch).not.toBe(a.epoch);
    expect(fresh.offset).toBe(1);
  });

  it('a bad publish id or option: a typed error, nothing appended', async () => {
    const s = createMemoryUserStreams();
    const { epoch } = await s.publish('u1', 't', 0);
    for (const options of [
      { id: '' },
      { id: 'x'.repeat(129) },
      { id: 'a b' },
      { id: 'é' },
      { id: 5 },
      { idd: 'x' },
      null,
      'x',
    ]) {
      await expect(s.publish('u1', 't', 1, options as never)).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
    }
    await expect(s.publish('u1', 't', 1, { idd: 'x' } as never)).rejects.toThrow(/did you mean `id`/);
    expect((await s.publish('u1', 't', 1, { id: 'x'.repeat(128) })).offset).toBe(2);
    expect((await s.read('u1', { offset: 0, epoch }, 10)).end).toBe(2);
    expect(() => createMemoryUserStreams({ publishDedup: 0 })).toThrow(/publishDedup/);
    expect(() => createMemoryUserStreams({ publishDedup: 65_537 })).toThrow(/publishDedup.*at most 65536/);
  });

  it('memory is bounded: past maxUsers the least recently used stream is dropped (a new epoch)', async () => {
    const s = createMemoryUserStreams({ maxUsers: 2 });
    const a = await s.publish('a', 't', 1);
    await s.publish('b', 't', 1);
    await s.publish('c', 't', 1);
    expect((await s.read('a', { offset: 1, epoch: a.epoch }, 1)).epoch).not.toBe(a.epoch);
  });
});
