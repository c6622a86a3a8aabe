import { randomUUID } from 'node:crypto';
import { StoreError } from '../core/errors.js';
import { timerDelay } from '../core/timer-delay.js';
import type { LeaseReply } from '../store/ordering.js';

/** The store operation a lease needs (see `leaseRenew` in store-ops.ts). */
export interface LeaseStore {
  leaseRenew(name: string, run: string, ms: number, takeover: number | undefined): Promise<LeaseReply>;
}

/**
 * A {@link Snowflake}'s persisted lease on its name (see `Snowflake.start`): the store holds a
 * timestamp no id of this run exceeds, and which run holds the name. Renewed `every` ms ahead of
 * the generator's time at half-time, from `next()` and from an idle timer; once it runs out
 * unrenewed, `check` throws rather than let an id reach milliseconds the next run may use.
 */
export class SnowflakeLease {
  #ms = Number.NEGATIVE_INFINITY;
  readonly every: number;
  #renewing = false;
  #error: unknown;
  /** `close()` was called: no renewal from then on, and ids fail once the lease runs out. */
  #closed = false;
  /** Another run holds the name: no renewal from then on (the error says so). */
  #lost = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #store: LeaseStore;
  readonly #name: string;
  readonly #run = randomUUID();
  /** The value read at start and waited out: the first renewal takes the name over only from it. */
  readonly #stored: number;
  /** The generator's time to renew from: its clock, or its last id's millisecond when later. */
  readonly #from: () => number;

  constructor(store: LeaseStore, name: string, every: number, stored: number, from: () => number) {
    this.#store = store;
    this.#name = name;
    this.every = every;
    this.#stored = stored;
    this.#from = from;
  }

  /** Persisted: no id of this run has a timestamp above it. */
  get ms(): number {
    return this.#ms;
  }

  /** Takes the name (or fails with a StoreError), then keeps renewing it while idle. */
  async acquire(now: () => number): Promise<void> {
    await this.#renew();
    if (this.#error !== undefined) {
      // A store failure is a StoreError already; a name held by another live run becomes one.
      throw this.#error instanceof StoreError ? this.#error : new StoreError('snowflake lease', this.#error);
    }
    // An idle generator keeps its lease too: renewed at half-time whether or not ids are asked
    // for (unref'd: it never keeps the process alive; `close()` stops it).
    this.#timer = setInterval(
      () => {
        try {
          this.renewIfDue(now());
        } catch (err) {
          this.#error = err; // a clock that fails: next() reports it
        }
      },
      Math.max(1, timerDelay(Math.floor(this.every / 2))),
    );
    this.#timer.unref?.();
  }

  /** Stops renewing; ids fail once the lease runs out. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  /** Throws a StoreError when `ms` lies past the lease; renews it when due. */
  check(ms: number): void {
    if (ms > this.#ms) {
      // Renewed now, so a later call can succeed once the store answers; this id cannot wait.
      if (this.#mayRenew()) void this.#renew();
      throw new StoreError(
        'snowflake lease',
        this.#closed
          ? new Error(`the generator was closed and its lease ran out at ${this.#ms} ms`)
          : (this.#error ?? new Error(`the lease ran out at ${this.#ms} ms`)),
      );
    }
    this.renewIfDue(ms);
  }

  /** Renews the lease at half-time (once at a time): from `next()`, and from its timer while idle. */
  renewIfDue(ms: number): void {
    // At or past half-time: the idle timer ticks every half lease, and a strict `>` let its first
    // tick pass, so an idle generator renewed only as its lease ran out.
    if (this.#mayRenew() && ms >= this.#ms - this.every / 2) void this.#renew();
  }

  /** No renewal in flight, and the lease neither closed nor lost to another run. */
  #mayRenew(): boolean {
    return !this.#renewing && !this.#closed && !this.#lost;
  }

  async #renew(): Promise<void> {
    this.#renewing = true;
    try {
      const asked = this.#from() + this.every;
      // The first renewal takes the name over only if the lease is still the one read and
      // waited out at start (a compare-and-set on the stored value, whatever the clocks say): a
      // live run renews it meanwhile, and this run, which starts after what it read, would
      // then overlap the other's later milliseconds.
      const takeover = this.#ms === Number.NEGATIVE_INFINITY ? this.#stored : undefined;
      const reply = await this.#store.leaseRenew(this.#name, this.#run, asked, takeover);
      // Closed meanwhile: the next run may already hold the name; this one must not renew.
      if (this.#closed) return;
      if (!reply.held) {
        // Another run holds the name: this one keeps its own lease (the other run's ids all
        // lie past it) and fails for good once that runs out.
        this.#lost = true;
        this.#error = new Error(
          `another run holds '${this.#name}' (its lease runs to ${reply.ms} ms): one live generator per name and worker`,
        );
        return;
      }
      this.#ms = reply.ms;
      this.#error = undefined;
    } catch (err) {
      this.#error = err;
    } finally {
      this.#renewing = false;
    }
  }
}
