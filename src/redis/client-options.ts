import { InvalidOptionError } from '../core/errors.js';
import { isWellFormed } from '../core/validate.js';

/** What the store reads of an ioredis client's options (typed structurally: ioredis is optional). */
interface ClientOptions {
  keyPrefix?: unknown;
  enableOfflineQueue?: unknown;
  commandTimeout?: unknown;
  maxRetriesPerRequest?: unknown;
  redisOptions?: { keyPrefix?: unknown; enableOfflineQueue?: unknown; commandTimeout?: unknown };
}

function optionsOf(client: object): ClientOptions | undefined {
  const options = (client as { options?: unknown }).options;
  return typeof options === 'object' && options !== null ? (options as ClientOptions) : undefined;
}

/**
 * The `keyPrefix` the client prepends to every key argument it sends ('' when none): ioredis
 * prefixes the keys of a command (script KEYS too), never a SCAN pattern, and a SCAN answers keys
 * as stored. A Cluster takes its nodes' `redisOptions.keyPrefix` when it has none of its own.
 *
 * Refused: a keyPrefix that is not a string (a Buffer: SCAN patterns here are text), one with `{`
 * or `}` (it would move the hash tag of every key, as the store's own `prefix` would), and a
 * Cluster whose nodes prefix otherwise than it does (what a SCAN of a node finds could not be named
 * through the cluster).
 */
export function clientKeyPrefix(client: object): string {
  const options = optionsOf(client);
  const keyPrefix = options?.keyPrefix ?? '';
  if (typeof keyPrefix !== 'string' || /[{}]/.test(keyPrefix) || !isWellFormed(keyPrefix)) {
    throw new InvalidOptionError(
      'client.options.keyPrefix',
      'a well-formed string without `{` or `}` (they would move the hash tag)',
      keyPrefix,
    );
  }
  const nodePrefix = options?.redisOptions?.keyPrefix;
  if (
    (client as { isCluster?: unknown }).isCluster === true &&
    nodePrefix !== undefined &&
    nodePrefix !== keyPrefix
  ) {
    throw new InvalidOptionError(
      'client.options.redisOptions.keyPrefix',
      `absent or the Cluster's own keyPrefix (${JSON.stringify(keyPrefix)})`,
      nodePrefix,
    );
  }
  return keyPrefix;
}

/** The client's own command timeout (ioredis `commandTimeout`) in ms; Infinity when none. */
export function clientCommandTimeout(client: object): number {
  const options = optionsOf(client);
  const ms = options?.commandTimeout ?? options?.redisOptions?.commandTimeout;
  return typeof ms === 'number' && ms > 0 ? ms : Number.POSITIVE_INFINITY;
}

/**
 * True when the client refuses a command at once, without queueing it, while it is not connected
 * (`enableOfflineQueue: false`, on a Redis or on a Cluster).
 */
export function queuesOffline(client: object): boolean {
  return optionsOf(client)?.enableOfflineQueue !== false;
}

/**
 * The reconnection attempts after which ioredis fails the commands its offline queue holds
 * (`maxRetriesPerRequest`, 20 by default); undefined when it never does (`null`).
 */
export function maxRetriesPerRequest(client: object): number | undefined {
  const options = optionsOf(client);
  if (options === undefined || !('maxRetriesPerRequest' in options)) return undefined;
  const n = options.maxRetriesPerRequest;
  return typeof n === 'number' && n >= 0 ? n : undefined;
}
