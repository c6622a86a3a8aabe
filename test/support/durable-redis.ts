// A redis-server of a test's own with every write fsynced to its AOF before the reply, restarted
// in place (same port, same directory) mid-run; and the admin moves of the fault tests that run
// worker processes against it. With appendfsync always, a write Redis answered is on disk, so a
// restart cannot forget it (with everysec the last second could be lost, and a test could not
// tell that from a double booking).
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { type StartedRedis, startRedis } from './redis-servers.js';

const AOF = ['--appendonly', 'yes', '--appendfsync', 'always'];

export interface DurableRedis {
  readonly port: number;
  readonly url: string;
  /** Stops the server, waits `downMs`, and starts it again on its port from its directory. */
  restart(downMs: number): Promise<void>;
  /** Stops it and removes its directory. */
  remove(): Promise<void>;
}

export async function startDurableRedis(): Promise<DurableRedis> {
  let server: StartedRedis = await startRedis(AOF);
  const { port, dir } = server;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    restart: async (downMs) => {
      await server.stop();
      await new Promise((r) => setTimeout(r, downMs));
      server = await startRedis(AOF, { port, dir });
    },
    remove: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An admin connection that rides out the server's restarts (refused meanwhile: expected). */
export function adminClient(port: number): Redis {
  const admin = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null, retryStrategy: () => 50 });
  admin.on('error', () => {});
  return admin;
}

/** Kills every connection of the clients named `name` on `node`; resolves to how many. */
export async function killClients(node: Redis, name: string): Promise<number> {
  const list = (await node.client('LIST')) as string;
  const ids = list
    .split('\n')
    .filter((l) => l.includes(`name=${name}`))
    .map((l) => /id=(\d+)/.exec(l)?.[1])
    .filter((id): id is string => id !== undefined);
  for (const id of ids) await node.client('KILL', 'ID', id).catch(() => 0);
  return ids.length;
}
