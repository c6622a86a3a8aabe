// What arrived where, per client and direction, and how it compares with what was sent: every
// message numbered 1..N per client, each arrival recorded in the order it happened.

/** One direction of one gateway, summed over the clients. */
export interface DirectionCounts {
  /** Messages sent (client to server) or published (server to client). */
  readonly sent: number;
  /** Arrived exactly once. */
  readonly once: number;
  /** Never arrived. */
  readonly lost: number;
  /** Arrived more than once (counted once per message). */
  readonly doubled: number;
  /** First arrived after a higher-numbered message of the same client had. */
  readonly outOfOrder: number;
}

/**
 * Arrivals of numbered messages per client: a handler's effect (client to server) or a message the
 * client delivered to the application (server to client).
 *
 * Usage (internal to the CLI): `tally.arrived(3, 17); tally.counts(expected)`
 */
export class Tally {
  readonly #arrivals: number[][];

  constructor(clients: number) {
    this.#arrivals = Array.from({ length: clients }, () => []);
  }

  /** Message `n` of `client` arrived (again, maybe). */
  arrived(client: number, n: number): void {
    this.#arrivals[client]?.push(n);
  }

  /** How many arrivals `client` had so far (repeats included). */
  count(client: number): number {
    return this.#arrivals[client]?.length ?? 0;
  }

  /** The counts against `sent[client]` messages per client, numbered 1..sent[client]. */
  counts(sent: readonly number[]): DirectionCounts {
    let once = 0;
    let lost = 0;
    let doubled = 0;
    let outOfOrder = 0;
    for (const [client, arrivals] of this.#arrivals.entries()) {
      const total = sent[client] ?? 0;
      const times = new Array<number>(total + 1).fill(0);
      let highest = 0;
      for (const n of arrivals) {
        if (n < 1 || n > total) continue;
        if (times[n] === 0 && n < highest) outOfOrder++;
        times[n] = (times[n] as number) + 1;
        highest = Math.max(highest, n);
      }
      for (let n = 1; n <= total; n++) {
        const t = times[n] as number;
        if (t === 0) lost++;
        else if (t === 1) once++;
        else doubled++;
      }
    }
    return { sent: sent.reduce((a, b) => a + b, 0), once, lost, doubled, outOfOrder };
  }
}

/** True when nothing was lost, doubled or out of order. */
export function isClean(c: DirectionCounts): boolean {
  return c.lost === 0 && c.doubled === 0 && c.outOfOrder === 0 && c.once === c.sent;
}
