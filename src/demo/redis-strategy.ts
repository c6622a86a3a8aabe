import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { roomName } from './delivery-log.js';
import { DemoFailure } from './failure.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import { openRedisLedger, type RedisLedgerHandle } from './redis-ledger.js';
import { WORKER_CONFIG_ENV, type WorkerConfig } from './redis-worker-config.js';
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
    // The coordinator's own connection: opened before any worker starts (an unreachable Redis
    // fails fast, with its URL named), used for the room totals, and for removing the run's
    // keys whatever happens.
    let coordinator: RedisLedgerHandle | undefined;
    const release = async () => {
      const handle = coordinator;
      coordinator = undefined;
      if (!handle) return;
      try {
        await handle.cleanup();
      } finally {
        await handle.close();
      }
    };
    return {
      id: `onceflow-redis-c${SETTLEMENT_CAPACITY}`,
      name: `onceflow on Redis (capacity ${SETTLEMENT_CAPACITY}, ${options.workers} workers)`,
      run() {
        throw new Error('the Redis row runs whole, through runAll');
      },
      async runAll(out, onProgress) {
        coordinator = await openRedisLedger(options.url, prefix);
        const dir = mkdtempSync(join(tmpdir(), 'onceflow-demo-'));
        const workers: Worker[] = [];
        try {
          let done = 0;
          for (let index = 0; index < options.workers; index++) {
            const config: WorkerConfig = {
              scenario,
              url: options.url,
              prefix,
              index,
              workers: options.workers,
              outFile: join(dir, `outcomes-${index}.bin`),
            };
            workers.push(
              startWorker(config, (n) => {
                done += n;
                onProgress(done);
              }),
            );
          }
          try {
            await Promise.all(workers.map((w) => w.done));
          } catch (err) {
            // One worker failed: the run cannot be judged. Stop the others before removing the
            // run's keys, so that none writes after the cleanup.
            for (const w of workers) w.child.kill('SIGKILL');
            await Promise.allSettled(workers.map((w) => w.exited));
            throw err;
          }
          for (const w of workers) {
            const outcomes = readFileSync(w.outFile);
            for (let i = 0; i < outcomes.length; i++) {
              const decision = outcomes[i] as number;
              if (decision === 0) continue;
              out.outcome[i] = decision;
              out.room[i] = log.settlements.room[log.ref[i] as number] as number;
            }
          }
        } catch (err) {
          await release();
          throw err;
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      async roomTotals() {
        const handle = coordinator;
        if (!handle) throw new Error('roomTotals() before runAll()');
        try {
          const totals = new Float64Array(log.rooms);
          for (let r = 0; r < log.rooms; r++) {
            const coins = (await handle.ledger.totals(roomName(r))).coins;
            totals[r] = coins === undefined ? 0 : Number(coins);
          }
          return totals;
        } finally {
          await release();
        }
      },
    };
  };
}

/** A running worker process. */
interface Worker {
  readonly child: ChildProcess;
  readonly outFile: string;
  /** Resolves when it exited with 0; rejects with a {@link DemoFailure} naming it otherwise. */
  readonly done: Promise<void>;
  /** Resolves when it exited, however. */
  readonly exited: Promise<void>;
}

function startWorker(config: WorkerConfig, onProgress: (n: number) => void): Worker {
  const script = fileURLToPath(new URL('./redis-worker.js', import.meta.url));
  const child = spawn(process.execPath, [script], {
    // The IPC channel only tells the worker when this process is gone (see redis-worker.ts).
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    // In the environment, not the arguments: the URL may hold a password, and any user of the
    // machine can read a process's arguments (ps), only its owner its environment.
    env: { ...process.env, [WORKER_CONFIG_ENV]: JSON.stringify(config) },
  });
  // Piped as asked above (spawn's types cannot tell once an 'ipc' entry is in the list).
  const { stdout, stderr: errors } = child as typeof child & { stdout: Readable; stderr: Readable };
  let stderr = '';
  let pending = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('progress ')) onProgress(Number(line.slice(9)));
  });
  errors.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const done = exited.then((status) => {
    if (status === 0) return;
    const how = typeof status === 'number' ? `exited with ${status}` : `was killed (${status})`;
    const said = stderr.trim();
    // Redacted again here: whatever a worker printed (a crash's stack too) may hold the URL.
    throw new DemoFailure(redactUrl(`demo worker ${config.index} ${how}${said ? `: ${said}` : ''}`));
  });
  done.catch(() => {}); // observed through Promise.all; never an unhandled rejection here
  return {
    child,
    outFile: config.outFile,
    done,
    exited: exited.then(
      () => undefined,
      () => undefined,
    ),
  };
}
