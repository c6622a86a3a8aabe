import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * One Vitest project per kind of dependency, each with only the global setup it needs, so a
 * unit run starts no server and builds nothing (`npx vitest run --project unit`). `npm test`
 * runs every project. Each test file belongs to exactly one project (test/unit/projects.test.ts).
 */
export const projects = {
  /** No server, no build: modules' own tests, the kit on memory, properties, types, vectors. */
  unit: {
    include: [
      'src/**/*.test.ts',
      'test/unit/**/*.test.ts',
      'test/conformance/**/*.test.ts',
      'test/property/**/*.test.ts',
      'test/types/**/*.test.ts',
      'test/vectors/**/*.test.ts',
    ],
    exclude: [],
    globalSetup: [],
  },
  /**
   * A standalone Redis and a 3-master Redis Cluster (fault tests start their own servers too);
   * `dist/` for the worker processes of the multi-process tests (test/integration/fixtures).
   */
  redis: {
    include: ['test/integration/**/*.test.ts'],
    exclude: ['test/integration/postgres-*.test.ts'],
    globalSetup: ['test/setup/build.ts', 'test/setup/redis.ts', 'test/setup/cluster.ts'],
  },
  /** PostgreSQL; `dist/` for the worker processes of postgres-workers.test.ts. */
  postgres: {
    include: ['test/integration/postgres-*.test.ts'],
    exclude: [],
    globalSetup: ['test/setup/build.ts', 'test/setup/postgres.ts'],
  },
  /** The built package, the CLI, the demo, examples and docs blocks, against Redis and PostgreSQL. */
  e2e: {
    include: ['test/e2e/**/*.test.ts'],
    exclude: [],
    globalSetup: ['test/setup/build.ts', 'test/setup/redis.ts', 'test/setup/postgres.ts'],
  },
} as const;

export default defineConfig({
  test: {
    // Property and end-to-end tests run real work; 2 cores on CI.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: Object.entries(projects).map(([name, p]) => ({
      extends: true,
      test: {
        name,
        include: [...p.include],
        exclude: [...configDefaults.exclude, ...p.exclude],
        globalSetup: [...p.globalSetup],
        // Unit files share no server, so they take every core (Vitest's default leaves one free:
        // one worker on a 2-core machine) and run first, in a group of their own: the projects
        // of one group must share a worker count. They run in worker threads, still one fresh
        // module graph per file (isolated): a thread starts and imports faster than a child
        // process (`npx vitest run --project unit` on 2 cores: ~70 s in forks, ~37 s in threads,
        // at a load average of ~5). The other projects stay in forks: their fault tests start
        // and kill servers and workers, which child processes keep apart.
        ...(name === 'unit'
          ? { pool: 'threads' as const, maxWorkers: availableParallelism(), sequence: { groupOrder: 0 } }
          : { sequence: { groupOrder: 1 } }),
      },
    })),
  },
});
