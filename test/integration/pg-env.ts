import pg from 'pg';
import { afterAll, inject } from 'vitest';

/** The PostgreSQL for this run (the shared 127.0.0.1:5432 database `test`, or one the global setup started). */
export const PG_URL = inject('postgresUrl');

/**
 * A schema name unique to this test run (and worker): the shared database is never cleaned
 * wholesale, each run drops only what it made ({@link dropSchema}).
 */
export function runSchema(name: string): string {
  const tag = name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return `t_${tag}_${process.pid}_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`.slice(
    0,
    63,
  );
}

/** A pool on the run's database; `max` connections (default 4). */
export function testPool(max = 4): pg.Pool {
  return new pg.Pool({ connectionString: PG_URL, max });
}

/** Drops a schema this run made, with everything in it. */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  if (!schema.startsWith('t_')) throw new Error(`refusing to drop ${schema}: not a test run's schema`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** A pool that must not be used: each call is recorded in `calls` and throws (for checks that run before any SQL). */
export function untouchablePool(): { pool: Pick<pg.Pool, 'connect' | 'query'>; calls: string[] } {
  const calls: string[] = [];
  const pool = {
    connect: async () => {
      calls.push('connect');
      throw new Error('must not connect');
    },
    query: async () => {
      calls.push('query');
      throw new Error('must not query');
    },
  };
  return { pool: pool as unknown as Pick<pg.Pool, 'connect' | 'query'>, calls };
}

/** A pool of `max` connections and a schema of this run's own, dropped (and the pool ended) after the enclosing suite. */
export function testSchema(name: string, max = 4): { pool: pg.Pool; schema: string } {
  const pool = testPool(max);
  const schema = runSchema(name);
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });
  return { pool, schema };
}
