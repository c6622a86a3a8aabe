/**
 * Notices a server gone silent (docs/ws-protocol.md section 5): `onSilent` runs once no frame was
 * heard for `limitMs` by the monotonic clock. One timer, re-armed for the remainder when it fires
 * early, rather than a new timer for every frame received.
 */
export class SilenceWatch {
  readonly #limitMs: number;
  readonly #onSilent: (silentMs: number) => void;
  #last: number;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(limitMs: number, onSilent: (silentMs: number) => void) {
    this.#limitMs = limitMs;
    this.#onSilent = onSilent;
    this.#last = performance.now();
    this.#timer = setTimeout(() => this.#check(), limitMs);
  }

  heard(): void {
    this.#last = performance.now();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #check(): void {
    const silent = performance.now() - this.#last;
    if (silent >= this.#limitMs) {
      this.#timer = undefined;
      this.#onSilent(silent);
    } else this.#timer = setTimeout(() => this.#check(), this.#limitMs - silent);
  }
}
