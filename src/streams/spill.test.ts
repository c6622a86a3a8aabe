import { describe, expect, it } from 'vitest';
import { createSpill } from './spill.js';

describe('createSpill', () => {
  it('spills a key at its cap and every newer entry of it, never one below the cap', () => {
    const s = createSpill(2, 10);
    expect(s.place('1-0', 'a', 1)).toBe(false);
    expect(s.place('2-0', 'a', 2)).toBe(true);
    // Once spilled, even with room: per-key order (its spilled entry comes first).
    expect(s.place('3-0', 'a', 0)).toBe(true);
    expect(s.place('4-0', 'b', 0)).toBe(false);
    expect(s.low()).toBe('2-0');
  });

  it('holds a key past its cap once maxKeys keys are spilled (memory stays bounded)', () => {
    const s = createSpill(1, 2);
    expect(s.place('1-0', 'a', 1)).toBe(true);
    expect(s.place('2-0', 'b', 1)).toBe(true);
    expect(s.place('3-0', 'c', 1)).toBe(false);
    expect(s.size).toBe(2);
  });

  it('a pass from the lowest spilled entry of the eligible keys; a key stopped stays spilled from there', () => {
    const s = createSpill(2, 10);
    s.place('5-0', 'a', 2);
    s.place('3-0', 'b', 2);
    const pass = s.startPass((key) => key === 'a', false);
    expect(pass?.start).toBe('5-0');
    expect([...(pass?.eligible ?? [])]).toEqual(['a']);
    s.stop('a', '7-0');
    s.endPass(true);
    expect(s.has('a')).toBe(true);
    expect(s.low()).toBe('3-0');
    // A full pass starts at the lowest of every spilled key; a key it never stopped is drained.
    const full = s.startPass((key) => key === 'b', true);
    expect(full?.start).toBe('3-0');
    s.endPass(true);
    expect(s.has('b')).toBe(false);
    expect(s.has('a')).toBe(true);
  });

  it('an entry placed behind a running pass keeps its key spilled (the pass cannot drain it)', () => {
    const s = createSpill(2, 10);
    s.place('5-0', 'a', 2);
    const pass = s.startPass(() => true, false);
    if (pass === undefined) throw new Error('a pass');
    pass.cursor = '9-0';
    expect(s.place('4-0', 'a', 0)).toBe(true);
    s.endPass(true);
    expect(s.has('a')).toBe(true);
    expect(s.low()).toBe('4-0');
  });

  it('no pass without an eligible key, unless full', () => {
    const s = createSpill(2, 10);
    expect(s.startPass(() => true, true)).toBeUndefined();
    s.place('1-0', 'a', 2);
    expect(s.startPass(() => false, false)).toBeUndefined();
  });
});
