import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { roomName } from './delivery-log.js';
import { DemoFailure } from './failure.js';
import { once, onInterrupt } from './interrupt.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import type { ScenarioConfig } from './scenario.js';
import {
  openSharedLedger,
  runNamespace,
  type SharedBackend,
  type SharedLedgerHandle,
} from './shared-ledger.js';
import type { StrategyFactory } from './strategy.js';
import { WORKER_CONFIG_ENV, type WorkerConfig } from './worker-config.js';

/** Where and how the shared-store row runs. */
export interface SharedDemoOptions {
  readonly backend: SharedBackend;
  readonly url: string;
  readonly workers: number;
}

const BACKEND_NAME: Readonly<Record<SharedBackend, string>> = { redis: 'Redis', postgres: 'PostgreSQL' };

/** The row id of the shared-store run on `backend` (what `--json` lists and the exit code reads). */
export function sharedRowId(backend: SharedBackend): string {
  return `onceflow-${backend}-c${SETTLEMENT_CAPACITY}`;
}

/**
 * The onceflow row on a shared store (Redis or PostgreSQL): `workers` OS processes, each owning
 * the players of one partition (player % workers), apply the same log to one ledger at capacity
 * 4, the way consumers of a partitioned queue would. The run's state lives in a namespace of its
 * own (a key prefix, a schema) and is removed at the end.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const factory = sharedStrategy(config, { backend: 'redis', url: 'redis://127.0.0.1:6379', workers: 4 });
 */
export function sharedStrategy(scenario: ScenarioConfig, options: SharedDemoOptions): StrategyFactory {
  return (log) => {
    const namespace = runNamespace(options.backend);
    // The coordinator's own connection: opened before any worker starts (an unreachable server
    // fails fast, with its URL named), used for the room totals, and for removing the run's
    // state whatever happens: at the end, on a failure, and on an interrupt (SIGINT, SIGTERM).
    let opened: Promise<SharedLedgerHandle> | undefined;
    let coordinator: SharedLedgerHandle | undefined;
    const workers: Worker[] = [];
    let dir: string | undefined;
    let forget = () => {};
    // Once, whoever asks first (the run's end, its failure, an interrupt): the others wait for it.
    // The interrupt's undo is forgotten only once the clean-up is over: a Ctrl-C during it then
    // still finds its handler, which waits for this same clean-up instead of killing it half-way.
    const release = once(async () => {
      try {
        const handle = await opened?.catch(() => undefined);
        coordinator = undefined;
        if (!handle) return;
        try {
          await handle.cleanup();
        } finally {
          await handle.close();
        }
      } finally {
        forget();
      }
    });
    return {
      id: sharedRowId(options.backend),
      name: `onceflow on ${BACKEND_NAME[options.backend]} (capacity ${SETTLEMENT_CAPACITY}, ${options.workers} workers)`,
      run() {
        throw new Error('the shared-store row runs whole, through runAll');
      },
      async runAll(out, onProgress) {
        opened = openSharedLedger(options.backend, options.url, namespace);
        // Registered before the connection is open: on PostgreSQL, opening creates the schema.
        // The workers are stopped first, so that none writes after the clean-up.
        forget = onInterrupt(async () => {
          for (const w of workers) w.child.kill('SIGKILL');
          await Promise.allSettled(workers.map((w) => w.exited));
          if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
          await release();
        });
        try {
          coordinator = await opened;
        } catch (err) {
          forget();
          throw err;
        }
        const own = mkdtempSync(join(tmpdir(), 'onceflow-demo-'));
        dir = own;
        try {
          let done = 0;
          for (let index = 0; index < options.workers; index++) {
            const config: WorkerConfig = {
              scenario,
              backend: options.backend,
              url: options.url,
              namespace,
              index,
              workers: options.workers,
              outFile: join(own, `outcomes-${index}.bin`),
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
            // run's state, so that none writes after the cleanup.
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
          rmSync(own, { recursive: true, force: true });
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
  const script = fileURLToPath(new URL('./store-worker.js', import.meta.url));
  const child = spawn(process.execPath, [script], {
    // The IPC channel only tells the worker when this process is gone (see store-worker.ts).
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
