import { describe, expect, it } from 'vitest';
import { ClockOffset } from './clock-offset.js';

describe('ClockOffset', () => {
  it('keeps the largest lower bound, and drops it when a reply shows the server clock stepped back', () => {
    const offset = new ClockOffset();
    expect(offset.value).toBeUndefined();
    offset.learn(1000, 10, 20); // true offset in [980, 990]
    expect(offset.value).toBe(980);
    offset.learn(1100, 100, 115); // [985, 1000]: a larger lower bound
    expect(offset.value).toBe(985);
    offset.learn(1200, 200, 230); // [970, 1000]: a smaller one is not kept
    expect(offset.value).toBe(985);
    offset.learn(1250, 300, 305); // [945, 950]: below the kept bound, so the server stepped back
    expect(offset.value).toBe(945);
  });

  it('probe: calls in flight share one read; a failed read fails them and the next call reads again', async () => {
    const offset = new ClockOffset();
    let reads = 0;
    let fail = true;
    const read = async () => {
      reads++;
      if (fail) throw new Error('down');
      return performance.now() + 5000;
    };
    const [a, b] = await Promise.allSettled([offset.probe(read), offset.probe(read)]);
    expect([a.status, b.status, reads]).toEqual(['rejected', 'rejected', 1]);
    expect(offset.value).toBeUndefined();
    fail = false;
    await Promise.all([offset.probe(read), offset.probe(read)]);
    expect(reads).toBe(2);
    expect(offset.value).toBeGreaterThan(4990);
    expect(offset.value).toBeLessThanOrEqual(5000);
  });
});
