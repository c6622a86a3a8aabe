import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { wsShared } from './backend.js';
import type { JsonValue } from './frames.js';
import type { StreamPosition, UserStreamsOptions } from './user-streams.js';

/** Options of {@link createPublisher}. */
export interface PublisherOptions {
  /** The store the gateway nodes were given (a Redis store for a cluster of nodes). */
  store: Store;
  /** The streams' options, the same as the nodes' `streams`. */
  streams?: UserStreamsOptions;
}

const PUBLISHER_OPTIONS = keysOf<PublisherOptions>({ store: true, streams: true });

/** Publishes to users' streams from any process that has the store. */
export interface Publisher {
  /**
   * Appends `{ type, body }` to `user`'s stream (its next offset) and wakes the nodes holding the
   * user's connections; it waits in the stream while the user is offline (up to the retention).
   * With `id`, a retry after a lost reply appends nothing and answers the first position.
   */
  publish(user: string, type: string, body: JsonValue, options?: { id?: string }): Promise<StreamPosition>;
}

/**
 * A publisher for a backend worker that holds no connections: what it publishes reaches the user
 * on whichever gateway node holds the connection, in order.
 *
 * @example
 * ```ts
 * import { memoryStore } from 'onceflow';
 * import { createGateway, createPublisher } from 'onceflow/ws';
 *
 * const store = memoryStore(); // a Redis store (createRedisStore) for nodes in other processes
 * const gateway = await createGateway({ port: 0, store });
 * const worker = createPublisher({ store });
 * const at = await worker.publish('u-17', 'round.settled', { round: 42, won: 120 });
 * at.offset; // 1
 * await gateway.close();
 * ```
 */
export function createPublisher(options: PublisherOptions): Publisher {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { store }', options);
  knownKeys('', options, PUBLISHER_OPTIONS);
  const shared = wsShared(options.store, options.streams ?? {});
  return {
    async publish(user, type, body, publishOptions) {
      const at = await shared.streams.publish(user, type, body, publishOptions);
      await shared.live.published(user);
      return at;
    },
  };
}
