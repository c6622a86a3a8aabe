import { compareIdText } from './stream-id.js';

/** One held delivery: its stream id, its key, its fencing token and what the caller attached. */
export interface ScheduledJob<T> {
  readonly id: string;
  readonly key: string;
  /** The delivery count Redis recorded when this consumer got the entry (the fencing token). */
  token: number;
  payload: T;
  /** queued: waits its turn; running: handed out by take(); failed: waits to be delivered again. */
  state: 'queued' | 'running' | 'failed';
}

/** What {@link KeyScheduler.offer} did with a delivery. */
export type OfferOutcome = 'queued' | 'updated' | 'running';

/**
 * Per-key ordered parallelism, as plain bookkeeping (no I/O, no timers): the consumer offers the
 * entries it is delivered, takes what may start now, and reports how each ended.
 *
 * A key's entries run one at a time, lowest stream id first among those held: an entry delivered
 * again after a failure, or reclaimed from a dead consumer, is put back in id order, and the key
 * waits for it (a failed entry blocks its key until it is delivered again or dropped), so newer
 * entries of the key never overtake an older one this consumer holds. Keys are independent and run
 * in parallel up to `concurrency`, taken in the order they became ready (no key starves another).
 */
export interface KeyScheduler<T> {
  /**
   * A delivery of entry `id`: queued in id order; `updated` when the entry is held already and not
   * running (a redelivery: its token and payload replaced, a failed entry queued again); `running`
   * when it is running now (its token is updated: the handler's ack then carries the new one).
   */
  offer(id: string, key: string, token: number, payload: T): OfferOutcome;
  /**
   * The entries that may start now (marked running), at most `concurrency` running in all. With
   * `runs`, at most `runs.max` of them, and a key whose head and next entries all satisfy
   * `runs.joins` starts them together (a run: its queued entries in id order, up to the first that
   * does not join), as consecutive items of the answer; the caller settles them in that order.
   */
  take(runs?: { max: number; joins: (job: ScheduledJob<T>) => boolean }): ScheduledJob<T>[];
  /** A running entry ended and is settled (acked, dead-lettered): removed, its key moves on. */
  complete(id: string): void;
  /** A running entry failed and stays pending in Redis: its key waits until it is offered again. */
  fail(id: string): void;
  /** The entry is no longer this consumer's (reclaimed elsewhere, gone from the stream): forgotten. */
  drop(id: string): void;
  /**
   * A running entry of a run did nothing (an entry before it in its run failed or was left
   * pending): queued again, to start once its key's entries before it are settled.
   */
  release(id: string): void;
  get(id: string): ScheduledJob<T> | undefined;
  /** Entries held (queued, running or failed). */
  readonly held: number;
  /** The most entries one key holds (its backlog, the running or failed head included). */
  longest(): number;
  /** The entries `key` holds (its backlog, the running or failed head included). */
  count(key: string): number;
  readonly running: number;
  /** Every held entry, for the caller's own bookkeeping (heartbeats, shutdown). */
  jobs(): IterableIterator<ScheduledJob<T>>;
}

interface KeyQueue<T> {
  readonly key: string;
  /** Held entries of the key, lowest id first. */
  readonly jobs: ScheduledJob<T>[];
  running: number;
}

/**
 * A {@link KeyScheduler} (internal to the consumer). For instance:
 *
 * ```ts
 * const s = createKeyScheduler<string>(2);
 * s.offer('1-0', 'a', 1, 'first of a');
 * s.offer('2-0', 'a', 1, 'second of a');
 * s.offer('3-0', 'b', 1, 'first of b');
 * s.take().map((j) => j.id); // ['1-0', '3-0']: a's second waits for its first
 * s.complete('1-0');
 * s.take().map((j) => j.id); // ['2-0']
 * ```
 */
export function createKeyScheduler<T>(concurrency: number): KeyScheduler<T> {
  // Longer than most functions: one closure over the per-key queues and the ready set, which every
  // method of the scheduler updates together.
  const byId = new Map<string, ScheduledJob<T>>();
  const queues = new Map<string, KeyQueue<T>>();
  // Insertion-ordered: keys start in the order they became ready.
  const ready = new Set<KeyQueue<T>>();
  let running = 0;

  function refresh(queue: KeyQueue<T>): void {
    const head = queue.jobs[0];
    if (head === undefined && queue.running === 0) {
      queues.delete(queue.key);
      ready.delete(queue);
      return;
    }
    if (queue.running === 0 && head?.state === 'queued') ready.add(queue);
    else ready.delete(queue);
  }

  function remove(id: string): ScheduledJob<T> | undefined {
    const job = byId.get(id);
    if (job === undefined) return undefined;
    byId.delete(id);
    const queue = queues.get(job.key) as KeyQueue<T>;
    const at = queue.jobs.indexOf(job);
    queue.jobs.splice(at, 1);
    if (job.state === 'running') {
      queue.running--;
      running--;
    }
    refresh(queue);
    return job;
  }

  /** A running job that stays held, as `state`; any other id is ignored. */
  function stop(id: string, state: 'queued' | 'failed'): void {
    const job = byId.get(id);
    if (job === undefined || job.state !== 'running') return;
    job.state = state;
    const queue = queues.get(job.key) as KeyQueue<T>;
    queue.running--;
    running--;
    refresh(queue);
  }

  return {
    offer(id, key, token, payload) {
      const held = byId.get(id);
      if (held !== undefined) {
        held.token = token;
        held.payload = payload;
        if (held.state === 'running') return 'running';
        held.state = 'queued';
        refresh(queues.get(held.key) as KeyQueue<T>);
        return 'updated';
      }
      const job: ScheduledJob<T> = { id, key, token, payload, state: 'queued' };
      byId.set(id, job);
      let queue = queues.get(key);
      if (queue === undefined) {
        queue = { key, jobs: [], running: 0 };
        queues.set(key, queue);
      }
      // New entries arrive in id order (appended in O(1)); an older one (a reclaim) walks back.
      let at = queue.jobs.length;
      while (at > 0 && compareIdText((queue.jobs[at - 1] as ScheduledJob<T>).id, id) > 0) at--;
      queue.jobs.splice(at, 0, job);
      refresh(queue);
      return 'queued';
    },
    take(runs) {
      const started: ScheduledJob<T>[] = [];
      const max = runs?.max ?? Number.POSITIVE_INFINITY;
      for (const queue of ready) {
        if (running >= concurrency || started.length >= max) break;
        ready.delete(queue);
        const head = queue.jobs[0] as ScheduledJob<T>;
        const long = runs?.joins(head) === true;
        for (let i = 0; i < queue.jobs.length; i++) {
          const job = queue.jobs[i] as ScheduledJob<T>;
          if (i > 0 && !(long && job.state === 'queued' && runs?.joins(job) === true)) break;
          job.state = 'running';
          queue.running++;
          running++;
          started.push(job);
          if (running >= concurrency || started.length >= max) break;
        }
      }
      return started;
    },
    complete(id) {
      remove(id);
    },
    fail(id) {
      stop(id, 'failed');
    },
    drop(id) {
      remove(id);
    },
    release(id) {
      stop(id, 'queued');
    },
    get: (id) => byId.get(id),
    get held() {
      return byId.size;
    },
    get running() {
      return running;
    },
    longest() {
      // One pass over the keys held: at most the consumer's maxHeld, once per read.
      let most = 0;
      for (const queue of queues.values()) most = Math.max(most, queue.jobs.length);
      return most;
    },
    count: (key) => queues.get(key)?.jobs.length ?? 0,
    jobs: () => byId.values(),
  };
}
