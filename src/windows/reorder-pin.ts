// The shapes a ReorderBuffer pins (see pinShapes in core/pin-shapes.ts). The class is passed in,
// so this module does not import the buffer back.

import type { ReorderBufferOptions } from './reorder-types.js';

/** What the pin calls on a buffer: its push and tick paths. */
interface PinnedBuffer {
  push(seq: number, item: number, now: number): unknown;
  tick(now: number): unknown;
}

// V8 gives an object's hidden class (its "map") a weak life: once no object of a shape is alive, a
// full GC frees the map, and every optimized function that embedded it is thrown away. A consumer
// between two bursts can hold no result array at all, so the maps of result arrays (and of a
// buffer, for a program that makes buffers per stream) would die at each full GC, and each burst
// would start in the interpreter (without the pin, 22 such deoptimisations in 15 runs of the
// ordering bench and ~15% more time per push: `node --expose-gc --trace-deopt bench/lib/child.mjs
// bench/ordering.bench.mjs`). One small buffer and one result of each path pin those shapes, held
// by the class itself (a symbol-keyed property): a module-level constant that no function reads
// is not kept by V8 after the module ran, so a `const` of them would pin nothing.
export function pinnedBuffers(Buffer: new (options: ReorderBufferOptions) => PinnedBuffer): unknown[] {
  const b = new Buffer({ capacity: 4, gapTimeout: 0, clock: { now: () => 0 } });
  const kept: unknown[] = [b, b.push(0, 0, 0), b.push(2, 2, 0), b.push(1, 1, 0)];
  kept.push(b.push(5, 5, 0), b.push(9, 9, 0), b.tick(1), b.push(4, 4, 2), b.push(6, 6, 3));
  return kept;
}
