import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { postgresAnswers, startPostgres } from '../../src/testing/postgres-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL database the integration tests use (the shared one, or one started here). */
    postgresUrl: string;
  }
}

/**
 * Global setup of the projects whose tests talk to PostgreSQL: ONCEFLOW_POSTGRES_URL when set;
 * else the machine's server on 127.0.0.1:5432 (database `test`), started with its cluster's own
 * command when it does not answer; else one initdb'd here on a free port, stopped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: { stop(): Promise<void> }[] = [];
  project.provide('postgresUrl', await ensurePostgres(started));
  return async () => {
    for (const s of started.reverse()) await s.stop();
  };
}

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
