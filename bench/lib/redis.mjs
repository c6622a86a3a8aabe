// Redis helpers shared by the suites and the measuring scripts.
import { CLIENT_STATE_SLACK_MS, STATE_SLACK_MS } from '../../dist/windows/limits/time.js';

/** Removes every key under `prefix` (SCAN + UNLINK, a page at a time; one standalone server). */
export { unlinkPrefix } from '../../dist/redis/unlink-prefix.js';

/**
 * The server's EVALSHA totals since its last stats reset (INFO commandstats): a measurement is the
 * difference of two readings, so nothing is reset on a shared server.
 */
export async function evalshaStats(client) {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'));
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

/**
 * INFO commandstats summed over `servers` (a cluster's masters, or one server): script calls
 * (EVALSHA + EVAL) and their usec, and the usec of every command but INFO (the reading itself).
 * As evalshaStats, a measurement is the difference of two readings.
 */
export async function commandStats(servers) {
  const totals = { scriptCalls: 0, scriptUsec: 0, usec: 0 };
  for (const server of servers) {
    const info = await server.info('commandstats');
    for (const m of info.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)) {
      if (m[1] === 'evalsha' || m[1] === 'eval') {
        totals.scriptCalls += Number(m[2]);
        totals.scriptUsec += Number(m[3]);
      }
      if (m[1] !== 'info') totals.usec += Number(m[3]);
    }
  }
  return totals;
}

/**
 * The JSON argument of limiter-take.lua (its header gives the layout) for decisions of cost 1 on
 * one limit (`code` its letter: codeOf in src/windows/limits/algorithms.ts), one per time in `times`: for
 * the scripts that call the script directly, as the Redis store's batches do.
 */
export function limiterTakeArg(code, limit, windowMs, param, times) {
  // The spec: code, limit, window, param, and block ms 0 (no block: the take reads none).
  const argv = [STATE_SLACK_MS, CLIENT_STATE_SLACK_MS, 0, 1, code, limit, windowMs, param, 0];
  // now, cost 1, no fence, one limit: spec 1.
  for (const t of times) argv.push(t, 1, 0, 1, 1);
  return JSON.stringify(argv);
}
