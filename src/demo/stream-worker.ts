#!/usr/bin/env node
// One consumer process of `onceflow demo --redis URL --streams`: reads the settlement stream in
// its group until SIGTERM, either onceflow's way (createStreamConsumer's ledger path: fence,
// booking and XACK in one script) or the naive way (the effect, then XACK as a separate command).
// The coordinator SIGKILLs some of them mid-run; what they did is read back from Redis, so a
// killed worker needs to report nothing.
import { Redis } from 'ioredis';
import { jsonSerializer } from '../idempotency/serializer.js';
import { createStreamConsumer } from '../streams/index.js';
import { settlementSignature } from './delivery-log.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import {
  naiveKeys,
  STREAM_WORKER_ENV,
  type StreamSettlement,
  type StreamWorkerConfig,
} from './stream-worker-config.js';

// Entries per read and in flight per process: small, so that a kill strands few entries and the
// deliveries one player has in flight across consumers stay within the bounded span the
// coordinator feeds (see streams-strategy.ts); 16 still keeps a local Redis busy.
const BATCH = 16;
// A read waits at most this long, so a SIGTERM ends a naive worker within ~100 ms.
const BLOCK_MS = 100;

async function main(config: StreamWorkerConfig, signal: AbortSignal): Promise<void> {
  const client = new Redis(config.url, { maxRetriesPerRequest: 3 });
  client.on('error', () => {}); // commands that fail reject on their own; reconnects are ioredis's
  try {
    if (config.mode === 'onceflow') await onceflow(client, config, signal);
    else await naive(client, config, signal);
  } finally {
    await client.quit();
  }
}

async function onceflow(client: Redis, config: StreamWorkerConfig, signal: AbortSignal): Promise<void> {
  const consumer = createStreamConsumer<StreamSettlement>({
    client,
    stream: config.stream,
    group: config.group,
    consumer: config.consumer,
    signal,
    block: BLOCK_MS,
    batch: BATCH,
    concurrency: BATCH,
    claimIdle: config.claimIdleMs,
    // A player's entries run one at a time, in stream order, within this consumer.
    key: (d) => d.event.player,
    ledger: {
      prefix: config.prefix,
      capacity: SETTLEMENT_CAPACITY,
      // The entry applySettlement books (onceflow-strategy.ts): owner = player, scope = room,
      // signature of the payload, order = creation time.
      entry: ({ event: e }) => ({
        owner: e.player,
        signature: settlementSignature({ room: e.room, round: e.round, net: e.net, final: e.final }),
        deltas: { coins: e.net },
        scope: e.room,
        order: e.order,
      }),
    },
  });
  await consumer.run();
}

async function naive(client: Redis, config: StreamWorkerConfig, signal: AbortSignal): Promise<void> {
  const keys = naiveKeys(config.prefix);
  // Reclaims what a killed consumer held, as any at-least-once consumer must: without it a kill
  // would leave entries pending forever. Checked every claimIdle / 3, as the library's consumer does.
  let nextClaim = 0;
  while (!signal.aborted) {
    let entries: [string, string[]][] = [];
    if (Date.now() >= nextClaim) {
      nextClaim = Date.now() + config.claimIdleMs / 3;
      const reply = (await client.call(
        'XAUTOCLAIM',
        config.stream,
        config.group,
        config.consumer,
        config.claimIdleMs,
        '0-0',
        'COUNT',
        BATCH,
      )) as [string, [string, string[]][]];
      entries = reply[1].filter((e) => Array.isArray(e[1]));
    }
    if (entries.length === 0) {
      const reply = (await client.call(
        'XREADGROUP',
        'GROUP',
        config.group,
        config.consumer,
        'COUNT',
        BATCH,
        'BLOCK',
        BLOCK_MS,
        'STREAMS',
        config.stream,
        '>',
      )) as [string, [string, string[]][]][] | null;
      entries = reply?.[0]?.[1] ?? [];
    }
    if (entries.length === 0) continue;
    // The effect first: every delivery is booked, transport duplicates too (no dedup).
    const effect = client.multi();
    for (const [, fields] of entries) {
      const at = (name: string) => fields[fields.indexOf(name) + 1] as string;
      const e = jsonSerializer.deserialize(at('e')) as StreamSettlement;
      effect.hincrby(keys.rooms, e.room, e.net);
      effect.hincrby(keys.players, e.player, e.net);
      effect.setbit(keys.seen, Number(at('i')), 1);
    }
    await effect.exec();
    // Then the ack, as a command of its own: a kill in between redelivers what was booked.
    await client.xack(config.stream, config.group, ...entries.map(([id]) => id));
  }
}

// A coordinator that died can neither judge the run nor remove its keys: stop with it.
process.on('disconnect', () => process.exit(1));
process.channel?.unref();

const controller = new AbortController();
// The coordinator's stop: finish what is in flight, ack it, and exit 0.
process.on('SIGTERM', () => controller.abort());
const config = JSON.parse(process.env[STREAM_WORKER_ENV] ?? '{}') as StreamWorkerConfig;
main(config, controller.signal).then(
  () => process.exit(0),
  (err: unknown) => {
    const message = redactUrl(err instanceof Error ? err.message : String(err));
    process.stderr.write(`${message}\n`, () => process.exit(1));
  },
);
