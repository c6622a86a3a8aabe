import { describe, expect, it } from 'vitest';
import { createMemoryLiveFeed } from './live-feed-memory.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('memory live feed', () => {
  it("calls the user's listeners after a publish, and only theirs", async () => {
    const feed = createMemoryLiveFeed();
    const calls: string[] = [];
    feed.watch('u1', () => calls.push('a'));
    feed.watch('u1', () => calls.push('b'));
    feed.watch('u2', () => calls.push('c'));
    await feed.published('u1');
    await tick();
    expect(calls.sort()).toEqual(['a', 'b']);
    await feed.published('nobody');
    await tick();
    expect(calls).toHaveLength(2);
  });

  it('coalesces a burst: a listener runs once per microtask turn per user', async () => {
    const feed = createMemoryLiveFeed();
    let n = 0;
    feed.watch('u1', () => n++);
    const burst: Promise<void>[] = [];
    for (let i = 0; i < 100; i++) burst.push(feed.published('u1'));
    await Promise.all(burst);
    await tick();
    expect(n).toBe(1);
    await feed.published('u1');
    await tick();
    expect(n).toBe(2);
  });

  it('each watch unsubscribes alone, the same function watched twice too; unsubscribe is idempotent', async () => {
    const feed = createMemoryLiveFeed();
    let n = 0;
    const listener = () => n++;
    const first = feed.watch('u1', listener);
    feed.watch('u1', listener);
    first();
    first();
    await feed.published('u1');
    await tick();
    expect(n).toBe(1);
  });

  it('a listener that unsubscribes another of its user in a call: that one is not called', async () => {
    const feed = createMemoryLiveFeed();
    const calls: string[] = [];
    let stopB = () => {};
    feed.watch('u1', () => {
      calls.push('a');
      stopB();
    });
    stopB = feed.watch('u1', () => calls.push('b'));
    await feed.published('u1');
    await tick();
    expect(calls).toEqual(['a']);
  });

  it("a listener's throw goes to onError; the others still run", async () => {
    const errors: [unknown, string][] = [];
    const feed = createMemoryLiveFeed({ onError: (err, source) => errors.push([err, source]) });
    let n = 0;
    feed.watch('u1', () => {
      throw new Error('boom');
    });
    feed.watch('u1', () => n++);
    await feed.published('u1');
    await tick();
    expect(n).toBe(1);
    expect(errors).toEqual([[new Error('boom'), 'listener']]);
  });

  it('bad input and use after close: typed errors', async () => {
    const feed = createMemoryLiveFeed();
    expect(() => feed.watch('', () => {})).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    expect(() => feed.watch('u1', 5 as never)).toThrow(/listener/);
    await expect(feed.published('x'.repeat(300))).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    expect(() => createMemoryLiveFeed({ onErr: () => {} } as never)).toThrow(/did you mean `onError`/);
    expect(() => createMemoryLiveFeed({ onError: 1 as never })).toThrow(/onError/);
    let n = 0;
    feed.watch('u1', () => n++);
    await feed.close();
    expect(() => feed.watch('u1', () => {})).toThrow(expect.objectContaining({ code: 'ERR_CLOSED' }));
    await expect(feed.published('u1')).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    await tick();
    expect(n).toBe(0);
  });
});
