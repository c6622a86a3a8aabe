import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { checkUser } from './user-streams.js';

/**
 * How a gateway node learns that a user's stream (user-streams.ts) got a new message, whichever
 * process published it. A notice carries no message and no offset: the watcher re-reads the
 * stream from its last offset, so a spurious or repeated call costs one read and a missed one
 * would leave a client behind until its next message. Feeds therefore lean to calling too often:
 * after a reconnect of their transport they call every listener.
 *
 * Bounds: a feed holds one listener per watch, and a gateway watches once per connection, so the
 * listeners per user and the users held are bounded by the node's connections (its connection
 * limits), not by the feed.
 */
export interface LiveFeed {
  /**
   * Calls `listener` (soon, maybe spuriously, maybe coalesced) after a message is published to
   * `user`'s stream by any process using the same store. Returns an unsubscribe function.
   */
  watch(user: string, listener: () => void): () => void;
  /** Tells every watcher of `user` in every process (called by publish). */
  published(user: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where a listener's throw goes (`source: 'listener'`), and for a feed with a connection, that
 * connection's errors (`source: 'connection'`).
 */
export type LiveFeedErrorHandler = (err: unknown, source: 'listener' | 'connection') => void;

/**
 * The default error handler: a listener's throw is rethrown on a later tick, as an EventEmitter
 * listener's throw would surface, so a bug is never silent; a connection error is dropped, because
 * the feed reconnects by itself and then calls every listener, which covers whatever was missed.
 */
export const defaultLiveFeedOnError: LiveFeedErrorHandler = (err, source) => {
  if (source === 'listener') {
    setImmediate(() => {
      throw err;
    });
  }
};

/** A feed's `onError` option, checked: the default when absent. */
export function checkOnError(onError: unknown): LiveFeedErrorHandler {
  if (onError === undefined) return defaultLiveFeedOnError;
  if (typeof onError !== 'function') {
    throw new InvalidOptionError('onError', 'a function (err, source) => void', onError);
  }
  return onError as LiveFeedErrorHandler;
}

interface Watch {
  readonly listener: () => void;
}

/**
 * A feed's listeners by user, with calls coalesced: each user's listeners run at most once per
 * microtask turn, however many notices arrived in it (a burst of publishes, or a reconnect on top
 * of them, costs one re-read per watcher).
 */
export class Watchers {
  /**
   * A user's one watch, or a Set of them once a second one comes: a user usually has one
   * connection per node, and a Set per user is most of a watch's memory.
   */
  private readonly byUser = new Map<string, Watch | Set<Watch>>();
  private readonly pending = new Set<string>();
  private scheduled = false;

  constructor(private readonly onError: LiveFeedErrorHandler) {}

  /** Users with at least one listener. */
  get users(): number {
    return this.byUser.size;
  }

  /** Adds a listener; `onRemoved` runs after its removal (once, however often unsubscribe is called). */
  add(user: string, listener: unknown, onRemoved: () => void): () => void {
    checkUser(user);
    if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'a function', listener);
    const watch: Watch = { listener: listener as () => void };
    const held = this.byUser.get(user);
    if (held === undefined) this.byUser.set(user, watch);
    else if (held instanceof Set) held.add(watch);
    else this.byUser.set(user, new Set([held, watch]));
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      const h = this.byUser.get(user);
      if (h === watch) this.byUser.delete(user);
      else if (h instanceof Set && h.delete(watch) && h.size === 0) this.byUser.delete(user);
      onRemoved();
    };
  }

  notify(user: string): void {
    if (!this.byUser.has(user)) return;
    this.pending.add(user);
    this.schedule();
  }

  notifyAll(): void {
    for (const user of this.byUser.keys()) this.pending.add(user);
    this.schedule();
  }

  clear(): void {
    this.byUser.clear();
    this.pending.clear();
  }

  private schedule(): void {
    if (this.scheduled || this.pending.size === 0) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const users = [...this.pending];
    this.pending.clear();
    for (const user of users) {
      const held = this.byUser.get(user);
      if (held === undefined) continue;
      if (!(held instanceof Set)) {
        this.call(held);
        continue;
      }
      for (const watch of [...held]) {
        // A listener may unsubscribe another of the same user: that one is not called.
        if (this.holds(user, watch)) this.call(watch);
      }
    }
  }

  private holds(user: string, watch: Watch): boolean {
    const held = this.byUser.get(user);
    return held === watch || (held instanceof Set && held.has(watch));
  }

  private call(watch: Watch): void {
    try {
      watch.listener();
    } catch (err) {
      this.onError(err, 'listener');
    }
  }
}
