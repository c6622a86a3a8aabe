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

  it("takes a key's joining entries together as a run, at most `max`, in id order", () => {
    const s = createKeyScheduler<null>(100);
    s.offer('1-0', 'a', 1, null);
    s.offer('2-0', 'b', 1, null);
    s.offer('3-0', 'a', 1, null);
    s.offer('4-0', 'a', 2, null); // does not join (a redelivery): ends a's run
    s.offer('5-0', 'a', 1, null);
    const runs = { max: 3, joins: (job: { token: number }) => job.token === 1 };
    expect(ids(s.take(runs))).toEqual(['1-0', '3-0', '2-0']);
    // a has a run going: nothing of it starts until the run is settled.
    expect(s.take(runs)).toEqual([]);
    s.complete('1-0');
    expect(s.take(runs)).toEqual([]);
    s.complete('3-0');
    expect(ids(s.take(runs))).toEqual(['4-0']); // alone: its head does not join
    s.complete('4-0');
    expect(ids(s.take(runs))).toEqual(['5-0']);
  });

  it("queues a released entry of a run again, behind its key's entry still running", () => {
    const s = createKeyScheduler<null>(100);
    for (const id of ['1-0', '2-0', '3-0']) s.offer(id, 'a', 1, null);
    const runs = { max: 10, joins: () => true };
    expect(ids(s.take(runs))).toEqual(['1-0', '2-0', '3-0']);
    expect(s.running).toBe(3);
    s.release('2-0');
    s.release('3-0');
    expect(s.running).toBe(1);
    expect(s.take(runs)).toEqual([]); // 1-0 still runs
    s.complete('1-0');
    expect(ids(s.take(runs))).toEqual(['2-0', '3-0']);
  });

  it('never runs more than `concurrency` entries, runs included', () => {
    const s = createKeyScheduler<null>(2);
    for (const id of ['1-0', '2-0', '3-0']) s.offer(id, 'a', 1, null);
    expect(ids(s.take({ max: 10, joins: () => true }))).toEqual(['1-0', '2-0']);
    expect(s.running).toBe(2);
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
