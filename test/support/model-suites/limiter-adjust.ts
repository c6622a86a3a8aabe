// The limiter's state operations on a store against the memory model: generated sequences of
// takes, gets, sets, rewards, penalties, blocks and resets (every algorithm, single and multi-limit,
// some limits with a blockDuration), one fake clock passed to both, every answer identical.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimitOptions,
  memoryStore,
} from '../../../src/index.js';
import { limitSets, WINDOW } from '../../property/limiter-sequences.js';
import { view } from './limiter.js';
import { runsFor, type StoreTarget } from './target.js';

type Op = 'take' | 'get' | 'set' | 'reward' | 'penalty' | 'block' | 'unblock' | 'reset';

const edge = fc.constantFrom(0, 1, WINDOW - 1, WINDOW, WINDOW + 1, -1, -(WINDOW - 1));
const adjustSteps = fc.array(
  fc.record({
    op: fc.constantFrom<Op>(
      'take',
      'take',
      'take',
      'get',
      'set',
      'reward',
      'penalty',
      'block',
      'unblock',
      'reset',
    ),
    advance: fc.oneof(edge, fc.integer({ min: 0, max: 2 * WINDOW })),
    points: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 40 })),
    key: fc.constantFrom('a', 'b'),
  }),
  { minLength: 10, maxLength: 40 },
);

// Some sets block on refusal (a block longer than a window, and one shorter).
const blocking = fc
  .tuple(limitSets, fc.constantFrom(undefined, 700, 2500))
  .map(([limits, ms]): LimitOptions[] =>
    ms === undefined ? limits : limits.map((l, i) => (i === 0 ? { ...l, blockDuration: ms } : l)),
  );

const decision = (d: Decision) => ({ ...view(d), isFirstInDuration: d.isFirstInDuration });

export function limiterAdjustModelSuite(target: StoreTarget): void {
  describe(`limiter state operations on ${target.label} = memory model`, () => {
    let run = 0;
    it('get, set, reward, penalty, block, reset and takes answer as on the memory store', () =>
      fc.assert(
        fc.asyncProperty(blocking, adjustSteps, async (limits, seq) => {
          const clock = new FakeClock(1_000_000);
          const options = {
            clock,
            limits,
            name: `adjust-${run++}`,
            blockCache: false,
            timeout: '5s',
          } as const;
          const memory = createLimiter({ store: memoryStore({ clock }), ...options });
          const real = createLimiter({ store: target.store(), ...options });
          const canBlock = limits.some((l) => l.blockDuration !== undefined);
          for (const s of seq) {
            clock.set(clock.now() + s.advance);
            const both = async <T>(f: (l: typeof memory) => Promise<T>): Promise<[T, T]> => [
              await f(memory),
              await f(real),
            ];
            if (s.op === 'take') {
              const [m, r] = await both((l) => l.take(s.key, { cost: s.points }));
              expect(decision(r)).toEqual(decision(m));
            } else if (s.op === 'reset') {
              const [m, r] = await both((l) => l.reset(s.key));
              expect(r).toBe(m);
            } else if (s.op === 'block' || s.op === 'unblock') {
              if (!canBlock) continue;
              await both((l) => l.block(s.key, s.op === 'block' ? s.points * 100 : 0));
              const [m, r] = await both((l) => l.get(s.key));
              expect(r).toEqual(m);
            } else {
              const [m, r] = await both((l) =>
                s.op === 'get' ? l.get(s.key) : l[s.op as 'set' | 'reward' | 'penalty'](s.key, s.points),
              );
              expect(r).toEqual(m);
            }
          }
        }),
        { numRuns: runsFor(target, 60) },
      ));
  });
}
