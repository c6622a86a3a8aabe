// 4 OS processes, each a Hono server (@hono/node-server) with rateLimit on one Redis limiter,
// and requests spread over all four at once: exactly `limit` pass, each sees its own remaining
// count in `RateLimit` (no two admitted requests were counted as the same one), every other one
// is a 429 with Retry-After. A sliding log of an hour: no entry leaves it during the test.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const worker = fileURLToPath(new URL('./fixtures/hono-worker.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const WORKERS = 4;
const LIMIT = 25;
const REQUESTS = 100;

describe(`${WORKERS} Hono processes share one Redis limiter`, () => {
  const prefix = runPrefix('hono-workers');
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) child.stdin?.end();
    await Promise.all(children.map((c) => new Promise((resolve) => c.once('exit', resolve))));
    const client = new Redis(REDIS_URL);
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('exactly `limit` requests pass over all of them, each with its own remaining count', async () => {
    const config = {
      url: REDIS_URL,
      prefix,
      limit: { id: 'hot', algorithm: 'sliding-log', limit: LIMIT, window: '1h' },
    };
    const ports = await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        const child = spawn(process.execPath, [worker, JSON.stringify(config)], {
          cwd: root,
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        children.push(child);
        const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
        for await (const line of lines) return (JSON.parse(line) as { port: number }).port;
        throw new Error('a worker exited before it listened');
      }),
    );
    const responses = await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) => fetch(`http://127.0.0.1:${ports[i % WORKERS]}/`)),
    );
    const passed = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 429);
    expect(passed).toHaveLength(LIMIT);
    expect(refused).toHaveLength(REQUESTS - LIMIT);
    const remaining = passed.map((r) => Number(/;r=(\d+);/.exec(r.headers.get('ratelimit') ?? '')?.[1]));
    expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
    for (const r of refused) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
