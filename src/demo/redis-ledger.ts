import { createLedger } from '../index.js';
import { DemoFailure } from './failure.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import { tlsMismatchHint } from './redis-tls-hint.js';
import type { SharedLedgerHandle } from './shared-ledger.js';

// ioredis waits 10 s by default for a connection to open, TLS handshake included: the wait a
// rediss:// URL against a plain server ends with (the server never answers the TLS hello). A TCP
// connect plus a TLS handshake is 3 round trips: ~1 s at the ~300 ms of a connection across
// continents, far less to a server in the same region; 3 s is 3x that, and a wrong URL is told
// in 3 s instead of 10.
const CONNECT_TIMEOUT_MS = 3000;

/**
 * The demo's settlement ledger on Redis: `close` QUITs, `cleanup` removes the run's keys (SCAN +
 * UNLINK under the run's own prefix; never FLUSHALL).
 */
export type RedisLedgerHandle = SharedLedgerHandle;

/**
 * Opens the demo's settlement ledger on Redis. ioredis is an optional peer dependency of
 * onceflow, so it is loaded only here, when `--redis` is used, with a clear message if missing.
 * An unreachable server is a {@link DemoFailure} naming the URL (its password replaced by `***`),
 * saying when TLS may not match on both ends, and leaves no client reconnecting in the background
 * (which would keep the process alive).
 */
export async function openRedisLedger(url: string, prefix: string): Promise<RedisLedgerHandle> {
  let Redis: typeof import('ioredis').Redis;
  try {
    ({ Redis } = await import('ioredis'));
  } catch (cause) {
    throw new DemoFailure('`--redis` needs the ioredis package: npm install ioredis', { cause });
  }
  const { createRedisStore } = await import('../redis/index.js');
  const client = new Redis(url, {
    maxRetriesPerRequest: 3,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
  });
  // ioredis reports connection trouble as 'error' events; without a listener it prints them as
  // unhandled. The last one names the cause when connecting fails; later ones are retried by
  // ioredis itself (reconnect + resend), and a command that still fails rejects its own promise.
  let lastError: Error | undefined;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    const cause = lastError ?? err;
    const reason = (cause as Error).message;
    const hint = await tlsMismatchHint(url, cause);
    // Redacted as a whole: the URL's password, and any URL ioredis put in its own message.
    throw new DemoFailure(redactUrl(`cannot connect to Redis at ${url}: ${reason}${hint}`), { cause });
  }
  // ioredis reports a failed SELECT of the URL's database (an index out of range) as an 'error'
  // event and still connects, to database 0: the run would write where it was not asked to.
  if (lastError !== undefined) {
    client.disconnect();
    throw new DemoFailure(redactUrl(`cannot use Redis at ${url}: ${lastError.message}`), {
      cause: lastError,
    });
  }
  // The journal is not read by the demo (it reads per-room totals): keep none, bounded memory.
  const store = createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } });
  return {
    ledger: createLedger({ store, capacity: SETTLEMENT_CAPACITY }),
    async close() {
      await client.quit();
    },
    async cleanup() {
      let removed = 0;
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) removed += await client.unlink(...keys);
      } while (cursor !== '0');
      return removed;
    },
  };
}
