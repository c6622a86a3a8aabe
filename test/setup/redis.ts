import type { TestProject } from 'vitest/node';
import { pingable, type StartedRedis, startRedis } from '../support/redis-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The standalone Redis the integration tests use (the shared one, or one started here). */
    redisUrl: string;
  }
}

/**
 * Global setup of the projects whose tests talk to a standalone Redis: ONCEFLOW_REDIS_URL when
 * set; else the shared one on 6379 when it answers; else one started here, stopped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let own: StartedRedis | undefined;
  let redisUrl = process.env['ONCEFLOW_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
  if (!process.env['ONCEFLOW_REDIS_URL'] && !(await pingable(6379))) {
    own = await startRedis(['--appendonly', 'no']);
    redisUrl = `redis://127.0.0.1:${own.port}`;
  }
  project.provide('redisUrl', redisUrl);
  return async () => {
    await own?.remove();
  };
}
