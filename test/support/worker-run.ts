// Runs the multi-process ledger tests' workers (test/integration/fixtures/*apply-worker.mjs) on
// one delivery log, and checks what they booked against the truth: the Redis and PostgreSQL
// worker tests differ only in the store, the fixture and the faults they inject.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { createLedger } from '../../src/index.js';
import type { Store } from '../../src/store/store.js';
import type { Delivery } from '../property/settlement-log.js';
import { truth } from './worker-log.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** How many worker processes apply the log, each a shuffled copy of it. */
export const WORKERS = 4;

/** What a worker counted. */
export interface Counts {
  applied: number;
  duplicate: number;
  stale: number;
}

/**
 * Runs {@link WORKERS} processes of `fixture` (a path under test/integration/fixtures), each
 * given `target` and the log; `chaos` runs beside them until they are done.
 */
export async function runWorkers<C extends Counts>(
  fixture: string,
  target: object,
  players: Delivery[][],
  timeoutMs: number,
  chaos: (done: () => boolean) => Promise<void> = async () => {},
): Promise<C[]> {
  const worker = join(root, 'test/integration/fixtures', fixture);
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-log-'));
  const logFile = join(dir, 'log.json');
  writeFileSync(logFile, JSON.stringify(players));
  let finished = false;
  try {
    const workers = Array.from({ length: WORKERS }, (_, i) =>
      run(process.execPath, [worker, JSON.stringify({ ...target, logFile, seed: 1000 + i })], {
        cwd: root,
        timeout: timeoutMs,
      }),
    );
    const all = Promise.all(workers).finally(() => {
      finished = true;
    });
    const [results] = await Promise.all([all, chaos(() => finished)]);
    return results.map((r) => JSON.parse(r.stdout) as C);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each unique settlement took effect exactly once on `store`: balances, journals, seqs, room totals. */
export async function verifyExactlyOnce(
  store: Store,
  players: Delivery[][],
  counts: Counts[],
): Promise<void> {
  const t = truth(players);
  const ledger = createLedger({ store, capacity: 4 });
  // A command whose effect landed but whose reply was lost (a killed connection, a restart) is
  // resent and answers duplicate or stale: applied counts at most the truth; the journal and
  // balances below prove each one took effect exactly once.
  expect(counts.reduce((n, c) => n + c.applied, 0)).toBeLessThanOrEqual(t.count);
  const delivered = players.flat().length * WORKERS;
  expect(counts.reduce((n, c) => n + c.applied + c.duplicate + c.stale, 0)).toBe(delivered);
  for (const [player, balance] of t.balances) {
    expect(await ledger.balances(player), player).toEqual({ coins: balance });
    const journal = await ledger.journal({ owner: player });
    expect(journal.map((e) => e.signature).sort(), player).toEqual(
      [...(t.signatures.get(player) ?? [])].sort(),
    );
    // Seqs 1..n with no gap: no apply half-booked.
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_, i) => i + 1));
  }
  for (const [room, total] of t.rooms) expect(await ledger.totals(room), room).toEqual({ coins: total });
  expect((await ledger.journal()).length).toBe(t.count);
}
