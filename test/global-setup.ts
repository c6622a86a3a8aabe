import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { pingable, type StartedRedis, startCluster, startRedis } from './support/redis-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The standalone Redis the integration tests use (the shared one, or one started here). */
    redisUrl: string;
    /** Ports of the 3-master Redis Cluster started for this run. */
    clusterPorts: number[];
  }
}

/**
 * Once per `vitest run`: builds `dist/` (end-to-end tests run the built CLI; README examples
 * import the package by its own name), makes sure a standalone Redis answers (the shared one on
 * 6379, else one started here), and starts a 3-master Redis Cluster on free ports. Everything
 * started here is stopped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });

  const started: { stop(): Promise<void> }[] = [];
  let redisUrl = process.env['ONCEFLOW_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
  if (!process.env['ONCEFLOW_REDIS_URL'] && !(await pingable(6379))) {
    const own: StartedRedis = await startRedis(['--appendonly', 'no']);
    started.push(own);
    redisUrl = `redis://127.0.0.1:${own.port}`;
  }
  const cluster = await startCluster();
  started.push(cluster);
  project.provide('redisUrl', redisUrl);
  project.provide('clusterPorts', cluster.ports);
  return async () => {
    for (const s of started.reverse()) await s.stop();
  };
}
