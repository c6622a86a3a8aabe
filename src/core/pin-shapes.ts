/** The property under which {@link pinShapes} keeps its objects (one symbol for every owner). */
const PINNED = Symbol('onceflow.pinnedShapes');

/**
 * Keeps the objects `make` returns alive for as long as `owner` (a class) lives, so that V8 keeps
 * their hidden classes ("maps"). V8 frees a map at a full GC once no object of that shape is
 * alive, and throws away every optimized function that embedded it ("weak objects"): a program
 * whose results are all short-lived (a limiter's decisions, a reorder buffer's result arrays) would
 * otherwise restart those functions in the interpreter after each full GC between two bursts.
 *
 * Runs `make` once per owner, on the first call: call it where the owner's first instance is
 * made (its constructor or factory), never at module level, so that importing the package does
 * no work (`"sideEffects": false`) and a program that never makes one pays nothing. `make` may
 * make instances of `owner` itself: the owner is marked before `make` runs, so those calls return
 * at once.
 *
 * Best effort: if `make` throws (a host whose clock is mocked), nothing is kept and nothing is
 * thrown; a promise among the objects must carry its own `.catch`.
 *
 * The objects hang off the owner under a symbol, because a module-level constant that no function
 * reads is not retained by V8 once the module has run.
 *
 * Usage (internal):
 *
 *     constructor(options) { pinShapes(ReorderBuffer, pinnedBuffers); ... }
 */
export function pinShapes(owner: object, make: () => unknown[]): void {
  if (Object.hasOwn(owner, PINNED)) return;
  const kept: unknown[] = [];
  Object.defineProperty(owner, PINNED, {
    value: kept,
    enumerable: false,
    writable: false,
    configurable: false,
  });
  try {
    kept.push(...make());
  } catch {
    // best effort: a warm-up must never fail the call that made the first instance
  }
}

/** What {@link pinShapes} keeps for `owner` (for tests). */
export function pinnedShapes(owner: object): readonly unknown[] {
  return (owner as { [PINNED]?: unknown[] })[PINNED] ?? [];
}
