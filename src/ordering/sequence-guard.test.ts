import { describe, expect, it } from 'vitest';
import { SequenceGuard } from './sequence-guard.js';

describe('SequenceGuard (single-writer domain only)', () => {
  it('past → drop, current → process and advance, future → hold', () => {
    const guard = new SequenceGuard({ next: 5 });
    expect([4, 5, 5, 7, 6, 7, 8].map((s) => guard.check(s))).toEqual([
      'drop',
      'process',
      'drop',
      'hold',
      'process',
      'process',
      'process',
    ]);
    expect(guard.next).toBe(9);
  });

  it('across two writers it loses events: the reason it is confined to one writer', () => {
    // Room A numbers its settlements 10, 11; room B numbers its own 1, 2. One guard over both
    // (the seeds' per-player guard) drops every settlement of room B: money lost.
    const guard = new SequenceGuard({ next: 10 });
    expect(guard.check(10)).toBe('process');
    expect(guard.check(1)).toBe('drop');
    expect(guard.check(2)).toBe('drop');
  });

  it('validates its input', () => {
    expect(() => new SequenceGuard({ next: -1 })).toThrow(/next/);
    expect(() => new SequenceGuard().check(1.5)).toThrow(/seq/);
  });
});
