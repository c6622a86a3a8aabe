/** The property under which {@link pinShapes} keeps its objects (one symbol for every owner). */
const PINNED = Symbol('onceflow.pinnedShapes');

/**
 * Keeps the objects `make` returns alive for as long as `owner` (a class) lives, so that V8 keeps
 * their hidden classes ("maps"). V8 frees a map at a full GC once no object of that shape is
 * alive, and throws away every optimized function that embedded it ("weak objects"): a program
 * whose results are all short-lived (a limiter's decisions, a reorder buffer's result arrays) would
 * otherwise restart those functions in the interpreter after each full GC between two bursts.
 *
 * Best effort: if `make` throws (a host whose clock is mocked at import time), nothing is kept and
 * nothing is thrown; a promise among the objects must carry its own `.catch`.
 *
 * The objects hang off the owner under a symbol, because a module-level constant that no function
 * reads is not retained by V8 once the module has run.
 *
 * Usage (internal):
 *
 *     pinShapes(ReorderBuffer, () => [new ReorderBuffer({ capacity: 4, gapTimeout: 0 })]);
 */
export function pinShapes(owner: object, make: () => unknown[]): void {
  let kept: unknown[];
  try {
    kept = make();
  } catch {
    return; // best effort: a warm-up must never fail the import of the module it sits in
  }
  const existing = (owner as { [PINNED]?: unknown[] })[PINNED];
  if (existing !== undefined) {
    existing.push(...kept);
    return;
  }
  Object.defineProperty(owner, PINNED, {
    value: kept,
    enumerable: false,
    writable: false,
    configurable: false,
  });
}

/** What {@link pinShapes} keeps for `owner` (for tests). */
export function pinnedShapes(owner: object): readonly unknown[] {
  return (owner as { [PINNED]?: unknown[] })[PINNED] ?? [];
}
