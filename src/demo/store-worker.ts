#!/usr/bin/env node
// One worker process of `onceflow demo --redis URL` or `--postgres URL` with `--workers N`. It
// regenerates the same seeded log as the coordinator, takes the players of its partition
// (player % workers == index), applies their deliveries to the shared ledger, and writes one
// outcome byte per delivery to a file.
import { writeFileSync } from 'node:fs';
import { applySettlement } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import { generateLog } from './scenario.js';
import { openSharedLedger } from './shared-ledger.js';
import { WORKER_CONFIG_ENV, type WorkerConfig } from './worker-config.js';

// Players applied at once per worker: each player's deliveries stay strictly in order (one owner's
// deliveries never overtake each other, like one partition of a queue), different players overlap.
// 64 in flight per process keeps a local Redis or PostgreSQL busy without queueing deep in the client.
const LANES = 64;
// Progress lines every this many deliveries: a few per second per worker at local Redis speeds.
const PROGRESS_EVERY = 5_000;

async function main(config: WorkerConfig): Promise<void> {
  const log = generateLog(config.scenario);
  const { ledger, close } = await openSharedLedger(config.backend, config.url, config.namespace);
  const mine = new Map<number, number[]>();
  for (let i = 0; i < log.length; i++) {
    const player = log.player[i] as number;
    if (player % config.workers !== config.index || (log.ref[i] as number) < 0) continue;
    let list = mine.get(player);
    if (!list) mine.set(player, (list = []));
    list.push(i);
  }
  const outcomes = new Uint8Array(log.length);
  const queues = [...mine.values()];
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < queues.length) {
      const queue = queues[next++] as number[];
      for (const i of queue) {
        outcomes[i] = await applySettlement(ledger, log, log.ref[i] as number, true);
        if (++done % PROGRESS_EVERY === 0) process.stdout.write(`progress ${PROGRESS_EVERY}\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: LANES }, lane));
  process.stdout.write(`progress ${done % PROGRESS_EVERY}\n`);
  writeFileSync(config.outFile, outcomes);
  await close();
}

// A coordinator that died (a crash, a kill) can neither judge the run nor remove its keys: a
// worker that went on would only write more of them. The IPC channel closes with it.
process.on('disconnect', () => process.exit(1));
// Unref'd: the channel must not keep a worker that has finished alive.
process.channel?.unref();

const config = JSON.parse(process.env[WORKER_CONFIG_ENV] ?? '{}') as WorkerConfig;
main(config).catch((err: unknown) => {
  // Exit once the message is written (a pipe's write can be asynchronous): a client still
  // reconnecting in the background would keep this process alive, and the coordinator is waiting
  // for the exit to stop the run.
  const message = redactUrl(err instanceof Error ? err.message : String(err));
  process.stderr.write(`${message}\n`, () => process.exit(1));
});
