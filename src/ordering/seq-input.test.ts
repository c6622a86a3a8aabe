// Every public method that takes a sequence number or a range refuses a bad one with a typed error
// naming it, and changes no state (a bigint or a symbol must not reach the buffer's arithmetic,
// where it would throw a raw TypeError).
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../core/errors.js';
import { ReorderBuffer } from '../windows/reorder-buffer.js';
import { createCompensator } from './compensator.js';
import { createReorderer } from './reorderer.js';
import { SequenceGuard } from './sequence-guard.js';

/** Values no method may take as a sequence number, with a label for the test name. */
const BAD: [string, unknown][] = [
  ['2n', 2n],
  ['0n', 0n],
  ['NaN', Number.NaN],
  ['a fraction', 1.5],
  ['a negative number', -1],
  ['a string', '3'],
  ['an unsafe integer', 2 ** 53],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['-Infinity', Number.NEGATIVE_INFINITY],
  ['null', null],
  ['undefined', undefined],
  ['a symbol', Symbol('seq')],
  ['an object', {}],
  ['a boxed number', Object(3)],
  ['true', true],
];

/** An object that counts how often it is converted to a number: no check may call it. */
function trap(): { value: object; calls: () => number } {
  let calls = 0;
  return {
    value: {
      valueOf() {
        calls++;
        return 3;
      },
    },
    calls: () => calls,
  };
}

function expectRefused(fn: () => unknown, path: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(InvalidArgumentError);
  expect(caught).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path });
}

/** A buffer with something held, a hole, a missing range and an adaptive sample: state to keep. */
function busyBuffer(gapTimeout: '1s' | 'adaptive'): ReorderBuffer<string> {
  const b = new ReorderBuffer<string>({ capacity: 8, gapTimeout, clock: { now: () => 0 } });
  b.push(0, 'a', 0);
  b.push(2, 'c', 1);
  b.push(12, 'm', 2); // overflow: 1 and 3..4 become missing
  b.push(6, 'g', 3);
  return b;
}

describe.each(BAD)('a bad sequence number (%s)', (_label, bad) => {
  it.each(['push', 'pushRecovered'] as const)('ReorderBuffer.%s refuses it and changes nothing', (method) => {
    for (const gapTimeout of ['1s', 'adaptive'] as const) {
      const b = busyBuffer(gapTimeout);
      const before = JSON.stringify([b.snapshot(), b.stats(), b.missing(), b.deadline]);
      expectRefused(() => b[method](bad as number, 'x', 10), 'seq');
      expect(JSON.stringify([b.snapshot(), b.stats(), b.missing(), b.deadline])).toBe(before);
      // The buffer still works as it did: the next number releases the run behind it.
      expect(b.push(b.next, 'n', 11).outcome).toBe('released');
    }
  });

  it('Reorderer.push and pushRecovered refuse it, release nothing, and keep running', async () => {
    const released: number[] = [];
    const r = await createReorderer<string>({
      capacity: 8,
      gapTimeout: '1h',
      onRelease: (x) => {
        released.push(x.seq);
      },
    });
    r.push(1, 'b');
    const before = JSON.stringify(r.buffer.snapshot());
    expectRefused(() => r.push(bad as number, 'x'), 'seq');
    expectRefused(() => r.pushRecovered(bad as number, 'x'), 'seq');
    expect(JSON.stringify(r.buffer.snapshot())).toBe(before);
    r.push(0, 'a');
    await r.drained();
    expect(released).toEqual([0, 1]);
    await r.close();
  });

  it('SequenceGuard.check refuses it and does not advance', () => {
    const guard = new SequenceGuard({ next: 3 });
    expectRefused(() => guard.check(bad as number), 'seq');
    expect(guard.next).toBe(3);
    expect(guard.check(3)).toBe('process');
  });

  it('Compensator.fill and add refuse it and change nothing', async () => {
    const asked: unknown[] = [];
    const lane = createCompensator({
      request: async (range) => {
        asked.push(range);
      },
    });
    lane.add({ from: 3, to: 5 });
    const before = JSON.stringify([lane.pending(), lane.stats()]);
    expectRefused(() => lane.fill(bad as number), 'seq');
    expectRefused(() => lane.add({ from: bad as number, to: 9 }), 'gaps[0]');
    expectRefused(
      () =>
        lane.add([
          { from: 7, to: 8 },
          { from: 7, to: bad as number },
        ]),
      'gaps[1]',
    );
    expect(JSON.stringify([lane.pending(), lane.stats()])).toBe(before);
    await lane.idle();
    expect(asked).toEqual([{ from: 3, to: 5 }]);
    lane.close();
  });
});

describe('a number-like object as a sequence number', () => {
  it('is refused by every method without its valueOf being called', () => {
    const t = trap();
    const b = busyBuffer('adaptive');
    expectRefused(() => b.push(t.value as unknown as number, 'x', 10), 'seq');
    expectRefused(() => b.pushRecovered(t.value as unknown as number, 'x', 10), 'seq');
    expectRefused(() => new SequenceGuard().check(t.value as unknown as number), 'seq');
    const lane = createCompensator({ request: async () => {} });
    expectRefused(() => lane.fill(t.value as unknown as number), 'seq');
    expectRefused(() => lane.add({ from: t.value as unknown as number, to: 4 }), 'gaps[0]');
    lane.close();
    expect(t.calls()).toBe(0);
  });
});

describe('the valid edges are still taken', () => {
  it('0 and the largest safe integer', () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: '1s', clock: { now: () => 0 } });
    expect(b.push(0, 'a').outcome).toBe('released');
    const far = new ReorderBuffer<string>({
      next: Number.MAX_SAFE_INTEGER,
      capacity: 4,
      gapTimeout: '1s',
      clock: { now: () => 0 },
    });
    expect(far.push(Number.MAX_SAFE_INTEGER, 'z').outcome).toBe('released');
    const lane = createCompensator({ request: async () => {} });
    lane.add({ from: 0, to: 0 });
    lane.fill(0);
    expect(lane.pending()).toEqual([]);
    lane.close();
  });
});
