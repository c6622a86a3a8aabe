/**
 * A minimal typed event emitter (browsers and Node alike: no `events` module). Listeners run in
 * the order they were added; one that throws is reported through `onThrow` and the others still run.
 */
export class Emitter<Events extends { [K in keyof Events]: (arg: never) => void }> {
  readonly #listeners = new Map<keyof Events, Set<(arg: unknown) => void>>();
  readonly #onThrow: (event: keyof Events, err: unknown) => void;

  constructor(onThrow: (event: keyof Events, err: unknown) => void) {
    this.#onThrow = onThrow;
  }

  on<E extends keyof Events>(event: E, listener: Events[E]): () => void {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    // A Set holds a function once: wrapping it lets the same listener be added twice and each
    // returned `off` remove its own registration only.
    const entry = (arg: unknown): void => (listener as unknown as (a: unknown) => void)(arg);
    set.add(entry);
    return () => {
      set.delete(entry);
    };
  }

  count(event: keyof Events): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  emit<E extends keyof Events>(event: E, arg: Parameters<Events[E]>[0]): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(arg);
      } catch (err) {
        this.#onThrow(event, err);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
