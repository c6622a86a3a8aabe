import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { postgresAnswers, startPostgres } from '../src/testing/postgres-servers.js';
import { pingable, type StartedRedis, startCluster, startRedis } from './support/redis-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The standalone Redis the integration tests use (the shared one, or one started here). */
    redisUrl: string;
    /** Ports of the 3-master Redis Cluster started for this run. */
    clusterPorts: number[];
    /** The PostgreSQL database the integration tests use (the shared one, or one started here). */
    postgresUrl: string;
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
    started.push({ stop: () => own.remove() });
    redisUrl = `redis://127.0.0.1:${own.port}`;
  }
  const postgresUrl = await ensurePostgres(started);
  const cluster = await startCluster();
  started.push(cluster);
  project.provide('redisUrl', redisUrl);
  project.provide('clusterPorts', cluster.ports);
  project.provide('postgresUrl', postgresUrl);
  return async () => {
    for (const s of started.reverse()) await s.stop();
  };
}

/**
 * The PostgreSQL of this run: ONCEFLOW_POSTGRES_URL when set; else the machine's server on
 * 127.0.0.1:5432 (database `test`), started with its cluster's own command when it does not
 * answer; else one initdb'd here on a free port (stopped at the end).
 */
async function ensurePostgres(started: { stop(): Promise<void> }[]): Promise<string> {
  const given = process.env['ONCEFLOW_POSTGRES_URL'];
  if (given) return given;
  const shared = 'postgres://postgres@127.0.0.1:5432/test';
  if (await postgresAnswers(shared)) return shared;
  try {
    const versions = execFileSync('ls', ['/etc/postgresql'], { encoding: 'utf8' }).trim().split('\n');
    execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', versions[0] as string, 'main', 'start'], {
      stdio: 'inherit',
    });
    for (let i = 0; i < 50 && !(await postgresAnswers(shared)); i++)
      await new Promise((r) => setTimeout(r, 200));
    if (await postgresAnswers(shared)) return shared;
  } catch {
    // No cluster of the machine's to start: one of this run's own below.
  }
  const own = await startPostgres();
  started.push(own);
  return own.url;
}
