import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis clients that swallow their 'error' events (a dead port reports ECONNREFUSED on every
 * attempt), each remembered so that `disconnectAll` ends them.
 */
export function quietClients(): { client(options: RedisOptions): Redis; disconnectAll(): void } {
  const clients: Redis[] = [];
  return {
    client(options) {
      const c = new Redis(options);
      c.on('error', () => {});
      clients.push(c);
      return c;
    },
    disconnectAll() {
      for (const c of clients) c.disconnect();
    },
  };
}
