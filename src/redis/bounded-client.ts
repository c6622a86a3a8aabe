import { timerDelay } from '../core/timer-delay.js';
import { maxRetriesPerRequest, queuesOffline } from './client-options.js';
import type { RedisLike } from './eval.js';

/**
 * A command the store never gave to the client: it was not connected (connecting, reconnecting,
 * or never yet connected) for the whole wait, or it was closed meanwhile. The command can never
 * run: it is in no queue of the client's.
 */
export class NotSentError extends Error {
  override readonly name = 'NotSentError';
  /** False when the client was closed (it refuses every command from then on). */
  readonly retriable: boolean;
  constructor(message: string, retriable: boolean) {
    super(message);
    this.retriable = retriable;
  }
}

/** A command given to a connected client with no reply within the wait: it may have run. */
export class NoReplyError extends Error {
  override readonly name = 'NoReplyError';
}

/** What the gate reads of an ioredis client: its status, its events, and lazyConnect's connect(). */
interface Connectable {
  status?: unknown;
  on?(event: string, listener: () => void): unknown;
  connect?(): Promise<unknown>;
}

/**
 * A command waiting for its client to be ready: `ready` sends it, `closed` refuses it,
 * `reconnecting` counts a failed connection attempt.
 */
interface Waiter {
  ready(): void;
  closed(): void;
  reconnecting(): void;
}

// One set of waiters, and one pair of listeners, per client: every store made on it (one per
// test, per tenant) shares them, as connection-generation.ts shares its counter.
const gates = new WeakMap<object, Set<Waiter>>();

function waitersOf(client: Connectable): Set<Waiter> {
  let waiters = gates.get(client);
  if (waiters !== undefined) return waiters;
  const set = new Set<Waiter>();
  waiters = set;
  gates.set(client, set);
  // ioredis emits 'ready' on a tick after it became ready: it may have lost the connection since,
  // so a waiter goes only while the status still says ready (the others wait for the next one).
  client.on?.('ready', () => {
    if (client.status !== 'ready') return;
    for (const waiter of [...set]) {
      set.delete(waiter);
      waiter.ready();
    }
  });
  client.on?.('reconnecting', () => {
    for (const waiter of [...set]) waiter.reconnecting();
  });
  client.on?.('end', () => {
    for (const waiter of [...set]) {
      set.delete(waiter);
      waiter.closed();
    }
  });
  return waiters;
}

/** A pipeline of commands sent as one: what {@link pipelineOf} gives. */
export interface Pipeline {
  call(command: string, ...args: (string | number)[]): Pipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** A client that can pipeline (ioredis `Redis` and `Cluster`). */
interface Pipelining {
  pipeline(): Pipeline;
}

// The bounded clients' pipelines, by client (a pipeline is not a method of RedisLike: a minimal
// adapter has none).
const pipelines = new WeakMap<object, (extraMs: number) => Pipeline>();

/**
 * A pipeline on `client`: on a {@link boundedClient}, held and bounded as one of its commands
 * (its wait `extraMs` longer, for a WAIT in it that answers after up to its own timeout); on any
 * other client, the client's own (ioredis's offline queue and no bound of the store's).
 */
export function pipelineOf(client: RedisLike, extraMs: number): Pipeline {
  const bounded = pipelines.get(client);
  if (bounded !== undefined) return bounded(extraMs);
  return (client as unknown as Pipelining).pipeline();
}

/**
 * The client, with every command's wait bounded by `timeoutMs`, and sent only while the client is
 * connected, so that what a failure means is known:
 *
 * - While an ioredis client is not ready (connecting, reconnecting, never yet connected) a command
 *   is held here, not in the client's offline queue (which writes it whenever the client
 *   connects, however late): still held when the wait is over, or after the client's
 *   `maxRetriesPerRequest` reconnection attempts (as ioredis fails its offline queue), it is
 *   refused with {@link NotSentError} and can never run. A lazyConnect client still waiting is told to connect,
 *   as its own first command would.
 * - Given to a ready client, it was written (or is about to be): no reply within the wait rejects
 *   it with {@link NoReplyError}, and it may have run, or may still run (the client resends what
 *   was in flight when it reconnects).
 *
 * A client that refuses commands while disconnected (`enableOfflineQueue: false`) gets them at
 * once: it fails them itself, unsent, without a wait. A client without a status (a minimal
 * `call()` adapter) gets them at once too, and only the reply's wait is bounded. A pipeline
 * ({@link pipelineOf}, when the client has `pipeline()`) is held and bounded as one command.
 */
export function boundedClient(client: RedisLike, timeoutMs: number): RedisLike {
  // Longer than most functions: one closure over the client and what is read of it once (whether
  // it queues offline, its retries), which the wait, the call and the pipeline share.
  const connectable = client as RedisLike & Connectable;
  const gated = typeof connectable.on === 'function' && queuesOffline(client);
  // A client's maxRetriesPerRequest still holds: ioredis fails what its offline queue holds after
  // that many reconnection attempts (a Cluster waits for its own retry strategy instead).
  const retries =
    (client as { isCluster?: unknown }).isCluster === true ? undefined : maxRetriesPerRequest(client);
  const inspected = client as RedisLike & { isCluster?: unknown; options?: unknown };

  // Gives `send` to the client once it is ready (see above), within `waitMs`.
  function bounded<T>(waitMs: number, send: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let waiter: Waiter | undefined;
      const timer = setTimeout(() => {
        if (waiter === undefined) {
          reject(new NoReplyError(`no reply from Redis within ${waitMs} ms (the command may have run)`));
          return;
        }
        waitersOf(connectable).delete(waiter);
        const status = String(connectable.status);
        reject(
          new NotSentError(
            `the Redis client was not connected within ${waitMs} ms (${status}): the command was not sent`,
            true,
          ),
        );
      }, waitMs);
      const done = (err: unknown, reply?: T) => {
        clearTimeout(timer);
        if (err === undefined) resolve(reply as T);
        else reject(err);
      };
      const go = () => {
        waiter = undefined;
        let sent: Promise<T>;
        try {
          sent = send();
        } catch (err) {
          // Thrown by the client before it took the command (a malformed argument): settled
          // here, so the timer stops, and the 'ready' listener that called this goes on to the
          // other waiters.
          done(err ?? new Error('the Redis client threw'));
          return;
        }
        sent.then(
          (reply) => done(undefined, reply),
          (err: unknown) => done(err ?? new Error('the Redis client failed the command')),
        );
      };
      const status = connectable.status;
      // 'end': the client refuses it itself, at once (isClosedClient tells the caller so).
      if (!gated || typeof status !== 'string' || status === 'ready' || status === 'end') {
        go();
        return;
      }
      let attempts = 0;
      const refuse = (err: NotSentError) => {
        clearTimeout(timer);
        if (waiter !== undefined) waitersOf(connectable).delete(waiter);
        reject(err);
      };
      waiter = {
        ready: go,
        closed: () =>
          refuse(new NotSentError('the Redis client was closed: the command was not sent', false)),
        reconnecting() {
          if (retries === undefined || ++attempts <= retries) return;
          refuse(
            new NotSentError(
              `the Redis client did not connect in ${attempts} attempts (maxRetriesPerRequest ${retries}): the command was not sent`,
              true,
            ),
          );
        },
      };
      waitersOf(connectable).add(waiter);
      if (status === 'wait') connectable.connect?.().catch(() => {});
    });
  }

  const result: RedisLike & Connectable & { readonly isCluster: unknown; readonly options: unknown } = {
    // What the store's other parts read of a client (isClosedClient, bySlot, commandTimeout), as
    // the client's own.
    get status() {
      return connectable.status;
    },
    get isCluster() {
      return inspected.isCluster;
    },
    get options() {
      return inspected.options;
    },
    call(command, ...args) {
      return bounded(timeoutMs, () => client.call(command, ...args));
    },
  };
  if (typeof (client as Partial<Pipelining>).pipeline === 'function') {
    pipelines.set(result, (extraMs) => {
      // Recorded here, given to a pipeline of the client's only once it is ready.
      const commands: [string, ...(string | number)[]][] = [];
      const pipe: Pipeline = {
        call(command, ...args) {
          commands.push([command, ...args]);
          return pipe;
        },
        exec: () =>
          // Clamped as a timer is: both are at most 2^31 - 1 ms, their sum may not be.
          bounded(timerDelay(timeoutMs + extraMs), () => {
            const raw = (client as unknown as Pipelining).pipeline();
            for (const command of commands) raw.call(...command);
            return raw.exec();
          }),
      };
      return pipe;
    });
  }
  return result;
}
