// What a class is made with stays as it was made: these fields are getters over private fields,
// so an assignment from a caller throws instead of changing later decisions (a window's capacity,
// a buffer's overflow, a gate's key space, a generator's epoch: each would lose or repeat data).
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { Snowflake } from '../ordering/snowflake.js';
import { VersionGate } from '../ordering/version-gate.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { AdaptiveTimeout } from './adaptive-timeout.js';
import { ReorderBuffer } from './reorder-buffer.js';
import { SignatureWindow } from './signature-window.js';

const made = (): [object, Record<string, unknown>][] => [
  [new SignatureWindow({ capacity: 4 }), { capacity: 4 }],
  [
    new ReorderBuffer({ next: 1, capacity: 8, overflow: 'reject', maxMissing: 10, gapTimeout: 100 }),
    { capacity: 8, overflow: 'reject', maxMissing: 10 },
  ],
  [new VersionGate({ store: memoryStore(), name: 'users' }), { name: 'users' }],
  [
    new Snowflake({ worker: 3, epoch: 1000, rollbackToleranceMs: 5, clock: new FakeClock(2000) }),
    { worker: 3, epoch: 1000, rollbackToleranceMs: 5, workerBits: 10, sequenceBits: 12 },
  ],
  [
    new AdaptiveTimeout({ quantile: 0.5, factor: 2, min: 1, max: 1000, sampleSize: 16 }),
    { quantile: 0.5, factor: 2, minMs: 1, maxMs: 1000, sampleSize: 16 },
  ],
];

describe('fields fixed when made', () => {
  it('read as given, and cannot be assigned', () => {
    for (const [object, fields] of made()) {
      for (const [name, value] of Object.entries(fields)) {
        expect([object.constructor.name, name, (object as Record<string, unknown>)[name]]).toEqual([
          object.constructor.name,
          name,
          value,
        ]);
        expect(() => {
          (object as Record<string, unknown>)[name] = 99;
        }).toThrow(TypeError);
        expect((object as Record<string, unknown>)[name]).toEqual(value);
      }
    }
  });
});
