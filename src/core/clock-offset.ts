/**
 * A lower bound of (a server's clock − this process's `performance.now()`), learnt from replies
 * that carry the server's time: the Redis and PostgreSQL stores send a take's deadline in the
 * server's time with it (a fence the server checks, so a take answered without the store is never
 * charged later).
 *
 * A reply read the server's clock after it was sent and before it was received, so the true
 * offset lies in [serverMs − received, serverMs − sent]. The largest lower bound seen is kept,
 * unless a reply shows the kept one above what the offset can be now (the server's clock stepped
 * back): then that reply's lower bound replaces it.
 */
export class ClockOffset {
  #offset: number | undefined;
  #probing: Promise<void> | undefined;

  /** The bound, or `undefined` until a reply was learnt from. */
  get value(): number | undefined {
    return this.#offset;
  }

  /** Learns from a server time `serverMs` read between local times `sent` and `received`. */
  learn(serverMs: number, sent: number, received: number): void {
    const low = serverMs - received;
    const offset = this.#offset;
    if (offset === undefined || offset > serverMs - sent || low > offset) this.#offset = low;
  }

  /**
   * Reads the server's time with `read` and learns from it; calls made while one read is in
   * flight share it. A failed read fails its callers (and the next call reads again).
   */
  probe(read: () => Promise<number>): Promise<void> {
    this.#probing ??= (async () => {
      const sent = performance.now();
      const serverMs = await read();
      this.learn(serverMs, sent, performance.now());
    })().finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }
}
