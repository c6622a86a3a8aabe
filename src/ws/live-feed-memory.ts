import { ClosedError } from '../core/errors.js';
import { knownKeys } from '../core/validate.js';
import { checkOnError, type LiveFeed, type LiveFeedErrorHandler, Watchers } from './live-feed.js';
import { checkUser } from './user-streams.js';

export interface MemoryLiveFeedOptions {
  /** Where a listener's throw goes. Default: rethrown on a later tick (see defaultLiveFeedOnError). */
  readonly onError?: LiveFeedErrorHandler;
}

/**
 * One process's live feed, for the memory user streams: `published` reaches this process's
 * watchers only.
 */
export function createMemoryLiveFeed(options: MemoryLiveFeedOptions = {}): LiveFeed {
  knownKeys('', options, ['onError']);
  const watchers = new Watchers(checkOnError(options.onError));
  let closed = false;
  return {
    watch(user, listener) {
      if (closed) throw new ClosedError('live feed');
      return watchers.add(user, listener, () => {});
    },
    async published(user) {
      checkUser(user);
      if (closed) throw new ClosedError('live feed');
      watchers.notify(user);
    },
    async close() {
      closed = true;
      watchers.clear();
    },
  };
}
