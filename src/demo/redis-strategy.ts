import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { roomName } from './delivery-log.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { openRedisLedger } from './redis-ledger.js';
import type { WorkerConfig } from './redis-worker.js';
import type { ScenarioConfig } from './scenario.js';
import type { StrategyFactory } from './strategy.js';

/** Where and how the Redis row runs. */
export interface RedisDemoOptions {
  readonly url: string;
  readonly workers: number;
}

/**
 * The onceflow row on a shared Redis: `workers` OS processes, each owning the players of one
 * partition (player % workers), apply the same log to one Redis ledger at capacity 4, the way
 * consumers of a partitioned queue would. The run's keys live under a prefix of their own and
 * are removed at the end.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const factory = redisStrategy(config, { url: 'redis://127.0.0.1:6379', workers: 4 });
 */
export function redisStrategy(scenario: ScenarioConfig, options: RedisDemoOptions): StrategyFactory {
  return (log) => {
    const prefix = `onceflow-demo:${Date.now().toString(36)}:${process.pid}:`;
    return {
      id: `onceflow-redis-c${SETTLEMENT_CAPACITY}`,
      name: `onceflow on Redis (capacity ${SETTLEMENT_CAPACITY}, ${options.workers} workers)`,
      run() {
        throw new Error('the Redis row runs whole, through runAll');
      },
      async runAll(out, onProgress) {
        const dir = mkdtempSync(join(tmpdir(), 'onceflow-demo-'));
        try {
          let done = 0;
          const files = await Promise.all(
            Array.from({ length: options.workers }, (_, index) => {
              const outFile = join(dir, `outcomes-${index}.bin`);
              const config: WorkerConfig = {
                scenario,
                url: options.url,
                prefix,
                index,
                workers: options.workers,
                outFile,
              };
              return runWorker(config, (n) => {
                done += n;
                onProgress(done);
              }).then(() => outFile);
            }),
          );
          for (const file of files) {
            const outcomes = readFileSync(file);
            for (let i = 0; i < outcomes.length; i++) {
              const decision = outcomes[i] as number;
              if (decision === 0) continue;
              out.outcome[i] = decision;
              out.room[i] = log.settlements.room[log.ref[i] as number] as number;
            }
          }
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      async roomTotals() {
        const { ledger, close, cleanup } = await openRedisLedger(options.url, prefix);
        try {
          const totals = new Float64Array(log.rooms);
          for (let r = 0; r < log.rooms; r++) {
            const coins = (await ledger.totals(roomName(r))).coins;
            totals[r] = coins === undefined ? 0 : Number(coins);
          }
          await cleanup();
          return totals;
        } finally {
          await close();
        }
      },
    };
  };
}

function runWorker(config: WorkerConfig, onProgress: (n: number) => void): Promise<void> {
  const script = fileURLToPath(new URL('./redis-worker.js', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('progress ')) onProgress(Number(line.slice(9)));
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`worker ${config.index} exited with ${code}: ${stderr.trim()}`)),
    );
  });
}
