import { describe, expect, it } from 'vitest';
import { createKeyScheduler } from './key-scheduler.js';
import { compareIdText } from './stream-id.js';

const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);

describe('createKeyScheduler', () => {
  it('runs the example: a key waits for its earlier entry, other keys run beside it', () => {
    const s = createKeyScheduler<string>(2);
    s.offer('1-0', 'a', 1, 'first of a');
    s.offer('2-0', 'a', 1, 'second of a');
    s.offer('3-0', 'b', 1, 'first of b');
    expect(ids(s.take())).toEqual(['1-0', '3-0']);
    s.complete('1-0');
    expect(ids(s.take())).toEqual(['2-0']);
  });

  it('longest() is the backlog of the key holding most (its running or failed head included)', () => {
    const s = createKeyScheduler<null>(4);
    expect(s.longest()).toBe(0);
    for (let i = 1; i <= 3; i++) s.offer(`${i}-0`, 'a', 1, null);
    s.offer('4-0', 'b', 1, null);
    expect(s.longest()).toBe(3);
    s.take();
    s.fail('1-0');
    expect(s.longest()).toBe(3);
    s.offer('1-0', 'a', 2, null);
    s.take();
    s.complete('1-0');
    expect(s.longest()).toBe(2);
  });

  it('caps the entries running at concurrency', () => {
    const s = createKeyScheduler<null>(2);
    for (let i = 1; i <= 5; i++) s.offer(`${i}-0`, `k${i}`, 1, null);
    expect(ids(s.take())).toEqual(['1-0', '2-0']);
    expect(s.take()).toEqual([]);
    s.complete('2-0');
    expect(ids(s.take())).toEqual(['3-0']);
  });

  it('blocks a key on a failed entry until it is delivered again, then runs it first', () => {
    const s = createKeyScheduler<null>(4);
    s.offer('1-0', 'a', 1, null);
    s.offer('2-0', 'a', 1, null);
    expect(ids(s.take())).toEqual(['1-0']);
    s.fail('1-0');
    expect(s.take()).toEqual([]);
    expect(s.offer('1-0', 'a', 2, null)).toBe('updated');
    const [job] = s.take();
    expect(job?.id).toBe('1-0');
    expect(job?.token).toBe(2);
  });

  it('puts a reclaimed older entry before the newer entries of its key', () => {
    const s = createKeyScheduler<null>(4);
    s.offer('5-0', 'a', 1, null);
    expect(s.offer('3-0', 'a', 4, null)).toBe('queued');
    expect(ids(s.take())).toEqual(['3-0']);
  });

  it('updates the token of a running entry and does not start it twice', () => {
    const s = createKeyScheduler<null>(4);
    s.offer('1-0', 'a', 1, null);
    s.take();
    expect(s.offer('1-0', 'a', 2, null)).toBe('running');
    expect(s.take()).toEqual([]);
    expect(s.get('1-0')?.token).toBe(2);
  });

  it('forgets a dropped entry and lets its key move on', () => {
    const s = createKeyScheduler<null>(4);
    s.offer('1-0', 'a', 1, null);
    s.offer('2-0', 'a', 1, null);
    s.take();
    s.fail('1-0');
    s.drop('1-0');
    expect(ids(s.take())).toEqual(['2-0']);
    expect(s.held).toBe(1);
  });
});

describe('compareIdText', () => {
  it('compares both parts as numbers', () => {
    expect(compareIdText('9-0', '10-0')).toBeLessThan(0);
    expect(compareIdText('10-2', '10-10')).toBeLessThan(0);
    expect(compareIdText('10-10', '10-10')).toBe(0);
    expect(compareIdText('11-0', '10-99')).toBeGreaterThan(0);
  });
});
