import { Redis } from 'ioredis';
import { keysMatching } from './keys-matching.js';

/**
 * The Redis keys of the demo run of CLI process `pid` (its prefix: `onceflow-demo:<time>:<pid>:`),
 * and only its own: the shared Redis may hold other runs' keys (a killed run leaves its keys
 * behind), and other test files run demos at the same time.
 */
export function demoRunKeys(client: Redis, pid: number): Promise<string[]> {
  return keysMatching(client, `onceflow-demo:*:${pid}:*`, 10_000);
}

/** `demoRunKeys` on a client of its own on `url`, disconnected after. */
export async function demoRunKeysAt(url: string, pid: number): Promise<string[]> {
  const client = new Redis(url);
  try {
    return await demoRunKeys(client, pid);
  } finally {
    client.disconnect();
  }
}
