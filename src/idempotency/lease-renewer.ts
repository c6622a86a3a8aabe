import type { IdempotencyOps } from './options.js';

/**
 * Keeps a holder's lease alive while its `fn` runs: one renewal every third of the lease, on
 * real timers (the lease is a count of ms; the store decides with its own clock whether each
 * renewal came in time, so a FakeClock store refuses one that came after its lease, whatever the
 * timers did). Why a third: the renewal sent at lease/3 lands with two thirds of the lease left,
 * room for a slow round trip; one that fails (a lost reply, a failover) is retried a sixth of the
 * lease later, so a lease renewed at t survives failed renewals at t + L/3, t + L/2 and t + 2L/3,
 * and the one at t + 5L/6 still lands before t + L. A renewal answered `false` (the lease ran out
 * or was taken over) ends the holding: the result will not be recorded, and no renewal follows.
 */
export class LeaseRenewer {
  readonly #ops: IdempotencyOps;
  readonly #name: string;
  readonly #key: string;
  readonly #token: string;
  readonly #leaseMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #lost = false;

  constructor(ops: IdempotencyOps, name: string, key: string, token: string, leaseMs: number) {
    this.#ops = ops;
    this.#name = name;
    this.#key = key;
    this.#token = token;
    this.#leaseMs = leaseMs;
    this.#schedule(3);
  }

  /** Whether a renewal was refused: the lease is gone, `complete` would be refused too. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Stops renewing (fn returned or threw). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(fraction: 3 | 6): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => this.#renew(), Math.max(1, Math.floor(this.#leaseMs / fraction)));
    // A lease must not keep the process alive: fn's own work does, as long as it runs.
    this.#timer.unref?.();
  }

  #renew(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    let renewal: Promise<boolean>;
    try {
      renewal = this.#ops.idempotencyRenew(this.#name, this.#key, this.#token, this.#leaseMs);
    } catch {
      this.#schedule(6); // a store that threw instead of rejecting: a failed renewal all the same
      return;
    }
    renewal.then(
      (held) => {
        if (held) {
          this.#schedule(3);
          return;
        }
        this.#lost = true;
        this.stop();
      },
      () => this.#schedule(6),
    );
  }
}
