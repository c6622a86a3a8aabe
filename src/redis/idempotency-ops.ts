import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isWellFormed } from '../core/validate.js';
import type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyStoreOps,
} from '../store/idempotency.js';
import { type BatchItem, createBatcher } from './batcher.js';
import { type Durability, evalWaited } from './durability.js';
import { evalScript, type RedisLike } from './eval.js';
import { escapeId } from './keys.js';
import { NodeBatchRefused, type NodeClient, type NodeRouter } from './node-batch.js';
import { scripts } from './scripts.generated.js';
import { isClosedClient, redisStoreError } from './store-error.js';

// At most this many operations per script call. An entry is one HMGET and at most an HSET and a
// PEXPIRE (or a DEL): ~4-5 µs of Redis time for a begin that finds a completed record, ~8-12 µs
// for one that takes a new key or a complete (scripts/redis-idempotency-cost.mjs, on the 2-core
// machine of BENCHMARKS.md), so 128 of them hold the server for ~0.6-1.5 ms, no longer than a
// ledger batch (other clients wait no longer than that). The bench's 200 callers in flight then
// need two script calls per turn.
export const IDEMPOTENCY_MAX_BATCH = 128;

// At most this many bytes of arguments per script call (counted as 3 bytes per UTF-16 unit, an
// upper bound of the UTF-8 length), whatever the count: a value may be up to 512 MiB
// (maxResultBytes), and a batch of large values copied into one command would exceed Redis's
// client-query-buffer-limit (1 GiB by default: Redis closes the connection) and hold the
// server while it copies them. 1 MiB takes ~0.1-1 ms to copy and parse, the same order as a full
// batch's server time; an entry larger than that goes in a call of its own, as it did unbatched.
export const IDEMPOTENCY_MAX_BATCH_BYTES = 1 << 20;

type Op = 'b' | 'c' | 'n' | 'r';
const OPERATION = {
  b: 'idempotencyBegin',
  c: 'idempotencyComplete',
  n: 'idempotencyRenew',
  r: 'idempotencyRelease',
} as const satisfies Record<Op, string>;

/**
 * One queued operation: its record key, op and three arguments (idempotency-batch.lua's ARGV per
 * entry), and its caller's promise. Settled by the batch's `send` itself (each entry may fail on
 * its own), so the batcher's own settling afterwards is a no-op.
 */
interface IdemItem extends BatchItem<unknown> {
  readonly op: Op;
  readonly a: string;
  readonly b: string;
  readonly c: string;
}

/**
 * The idempotency operations on Redis (DESIGN §3.6): one record per (name, key), one key per
 * record, every transition one step of a Lua script on the record's Cluster slot, on Redis `TIME`:
 *
 *   <prefix>{idem:<name>:<key>}:r    hash    s: state ('p' | 'c'), h: payload hash, e: lease or
 *                                            ttl expiry (ms), c: created (ms), d: the holder's
 *                                            token (in progress) or the value (completed)
 *
 * A completed record's key expires (PEXPIRE) at its ttl; an in-progress one a lease after its
 * lease (idempotency-batch.lua says why). Name and key are escaped like every id of the store, so
 * neither can end the hash tag early or imitate another pair.
 *
 * Batched as ledger applies are: the operations called in one turn of the event loop (begins,
 * completes, renews and releases alike: the callers of one turn are in every phase of `run`) go
 * in one script call per hash slot (on a cluster, per master: node-batch.ts), in call order, at most IDEMPOTENCY_MAX_BATCH entries (and
 * IDEMPOTENCY_MAX_BATCH_BYTES) each; a lone caller pays one `setImmediate`. Each entry has its own
 * reply or error. Batches are pipelined, not ordered against each other: a caller sends its next
 * operation on a record only after the previous one answered, so two operations in flight at once
 * are concurrent calls, which may take effect in either order on every store.
 *
 * A lost reply (the connection dropped with a batch in flight) reaches each entry of the batch as
 * it reaches a call sent alone; batching only decides how many callers share it (every entry of
 * the batch in flight). The script may have run. When ioredis sends it again once it reconnects
 * (its default), each entry is answered by that second run: a begin finds its own lease
 * (`in-progress`), a complete its record completed (`false`, which `run` reports as a lost lease;
 * the value is stored), a release no record (`false`), a renew its lease (renewed again). When the
 * client fails it instead (maxRetriesPerRequest, a closed connection), each entry fails with
 * StoreError `outcome: 'unknown'`, `retriable: true`.
 */
export function redisIdempotencyOps(
  client: RedisLike,
  prefix: string,
  durability?: Durability,
  nodes?: NodeRouter,
): Required<IdempotencyStoreOps> {
  // Longer than most functions: its four operations share one batcher and its queue; the script call
  // and the replies are sendChunk and settleEntry below.
  const recordKey = (name: string, key: string) => `${prefix}{idem:${escapeId(name)}:${escapeId(key)}}:r`;

  const enqueue = createBatcher<unknown, IdemItem>({
    groupOf: nodes?.groupOf,
    // See above: no call order to keep between batches, so they are pipelined.
    ordered: false,
    maxBatch: IDEMPOTENCY_MAX_BATCH,
    async send(items) {
      // Chunks by bytes (most batches are one chunk); each chunk one script call, all pipelined.
      let from = 0;
      let bytes = 0;
      const calls: Promise<unknown>[] = [];
      const chunk = (items: readonly IdemItem[]) =>
        nodes === undefined
          ? sendChunk(client, durability, items, releaseAcquired)
          : nodes.run(
              items,
              (slot) => sendChunk(client, durability, slot, releaseAcquired),
              (node, all) => sendChunk(client, durability, all, releaseAcquired, nodes, node),
            );
      for (let i = 0; i < items.length; i++) {
        const item = items[i] as IdemItem;
        const size = 3 * ((item.keys[0] as string).length + item.a.length + item.b.length + item.c.length);
        if (i > from && bytes + size > IDEMPOTENCY_MAX_BATCH_BYTES) {
          calls.push(chunk(items.slice(from, i)));
          from = i;
          bytes = 0;
        }
        bytes += size;
      }
      calls.push(chunk(from === 0 ? items : items.slice(from)));
      await Promise.all(calls);
      // Every item is settled already (by sendChunk): the batcher's own resolve is then a no-op.
      return [];
    },
  });

  // The leases the begins of a batch took, released (best effort) when the batch's replica wait
  // fell short and every entry is about to fail: the caller's body has not run, and a lease left
  // held would answer its retry `in-progress` until it ran out. A release matches the token, so
  // it removes nothing of another caller's; one that fails leaves the lease to run out.
  async function releaseAcquired(items: readonly IdemItem[], reply: unknown): Promise<void> {
    if (!Array.isArray(reply) || reply.length !== 1 + 3 * items.length) return;
    const releases: Promise<unknown>[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as IdemItem;
      if (item.op === 'b' && reply[3 * i + 1] === 'a')
        releases.push(queue('r', item.keys[0] as string, item.b, '', '').catch(() => {}));
    }
    await Promise.all(releases);
  }

  // Queues one entry; its batch settles the promise. Called inside the promise's executor, so an
  // argument refused there rejects it before anything is queued.
  function queue<T>(op: Op, key: string, a: string, b: string, c: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      enqueue({ keys: [key], op, a, b, c, resolve: resolve as (reply: unknown) => void, reject });
    });
  }

  return {
    idempotencyBegin(command: IdempotencyBeginCommand): Promise<IdempotencyBeginReply> {
      try {
        const key = recordKey(text('name', command?.name), text('key', command?.key));
        const hash = text('payloadHash', command?.payloadHash);
        return queue('b', key, hash, text('token', command?.token), ms('leaseMs', command?.leaseMs));
      } catch (err) {
        return Promise.reject(err);
      }
    },

    idempotencyRenew(name, key, token, leaseMs) {
      try {
        const record = recordKey(text('name', name), text('key', key));
        return queue('n', record, text('token', token), ms('leaseMs', leaseMs), '');
      } catch (err) {
        return Promise.reject(err);
      }
    },

    idempotencyComplete(name, key, token, value, ttlMs) {
      try {
        const record = recordKey(text('name', name), text('key', key));
        return queue('c', record, text('token', token), text('value', value), ms('ttlMs', ttlMs));
      } catch (err) {
        return Promise.reject(err);
      }
    },

    idempotencyRelease(name, key, token) {
      try {
        const record = recordKey(text('name', name), text('key', key));
        return queue('r', record, text('token', token), '', '');
      } catch (err) {
        return Promise.reject(err);
      }
    },

    // Not batched: a read-only script of its own, as rare as the pre-checks that ask it (only a
    // filter's "maybe"); the batch script's replies have no room for a state without a value.
    async idempotencyGet(name, key) {
      const record = recordKey(text('name', name), text('key', key));
      const closed = isClosedClient(client);
      let reply: unknown;
      try {
        reply = await evalScript(client, scripts.idempotencyGet, [record], []);
      } catch (err) {
        throw redisStoreError('idempotencyGet', err, closed, 'read');
      }
      if (reply !== 'completed' && reply !== 'in-progress' && reply !== 'absent') {
        throw new StoreError('idempotencyGet', new Error(`unexpected reply ${String(reply)}`), {
          outcome: 'not-applied',
          retriable: false,
        });
      }
      return reply;
    },
  };
}

// One script call: settles each item with its entry's reply, or every item with the call's failure.
// With `node`, the node variant's call on that master, which throws NodeBatchRefused (settling
// nothing) when it did not run. Resolves to one (empty) reply per item: the items are settled.
async function sendChunk(
  client: RedisLike,
  durability: Durability | undefined,
  items: readonly IdemItem[],
  releaseAcquired: (items: readonly IdemItem[], reply: unknown) => Promise<void>,
  nodes?: NodeRouter,
  node?: NodeClient,
): Promise<undefined[]> {
  const keys: string[] = new Array(items.length);
  const args: string[] = new Array(items.length * 4);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as IdemItem;
    keys[i] = item.keys[0] as string;
    args[4 * i] = item.op;
    args[4 * i + 1] = item.a;
    args[4 * i + 2] = item.b;
    args[4 * i + 3] = item.c;
  }
  // Whether the client was closed when given the command (it then refuses it, never sends it).
  const closed = isClosedClient(client);
  let reply: unknown;
  try {
    // With durability, answered once enough replicas have the records (else ERR_STORE `unknown`).
    const script = scripts.idempotencyBatch;
    const waited =
      node === undefined || nodes === undefined
        ? await evalWaited(client, durability, 'idempotency', items.length, script, keys, args)
        : await nodes.eval(node, durability, 'idempotency', items.length, script, keys, args);
    reply = waited.reply;
    if (waited.short) {
      await releaseAcquired(items, reply);
      throw waited.short;
    }
  } catch (err) {
    // Nothing ran: the chunk goes per slot (node-batch.ts).
    if (err instanceof NodeBatchRefused) throw err;
    // The script may have run (a lost reply) or stopped part-way, or its replicas fell short:
    // each entry's failure is what that call alone would have got (see redisFailure).
    for (const item of items) item.reject(redisStoreError(OPERATION[item.op], err, closed, 'script'));
    return new Array(items.length);
  }
  if (!Array.isArray(reply) || reply.length !== 1 + 3 * items.length) {
    // Not the shape this script answers in: what ran, if anything, is unknown.
    const err = new Error(`unexpected reply ${JSON.stringify(reply)} to ${items.length} entries`);
    for (const item of items) {
      item.reject(new StoreError(OPERATION[item.op], err, { outcome: 'unknown', retriable: false }));
    }
    return new Array(items.length);
  }
  const now = reply[0] as number;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as IdemItem;
    const j = 3 * i + 1;
    settleEntry(item, reply, j, now);
  }
  return new Array(items.length);
}

/**
 * Settles `item` with its entry of a batch's reply (code, then two values, from `reply[j]`): its
 * own result, its own Redis error, or an unexpected reply. `now`: the batch's Redis TIME.
 */
function settleEntry(item: IdemItem, reply: unknown[], j: number, now: number): void {
  const code = reply[j];
  const a = reply[j + 1];
  switch (code) {
    case 1:
    case 0:
      if (item.op !== 'b') {
        item.resolve(code === 1);
        return;
      }
      break;
    case 'a':
      if (item.op === 'b') {
        item.resolve({ outcome: 'acquired', takeover: reply[j + 2] === 1, leaseExpiresAt: a, now });
        return;
      }
      break;
    case 'c':
      if (item.op === 'b') {
        item.resolve({ outcome: 'completed', value: a, now });
        return;
      }
      break;
    case 'i':
      if (item.op === 'b') {
        item.resolve({ outcome: 'in-progress', retryAfterMs: a, now });
        return;
      }
      break;
    case 'm':
      if (item.op === 'b') {
        item.resolve({ outcome: 'mismatch', now });
        return;
      }
      break;
    case 'e': {
      // This entry's Redis error, as an error reply to it alone would have been.
      const err = Object.assign(new Error(String(a)), { name: 'ReplyError' });
      item.reject(redisStoreError(OPERATION[item.op], err, false, 'script'));
      return;
    }
  }
  item.reject(
    new StoreError(
      OPERATION[item.op],
      new Error(`unexpected reply ${JSON.stringify(reply.slice(j, j + 3))}`),
      {
        outcome: 'unknown',
        retriable: false,
      },
    ),
  );
}

/**
 * A string argument, as the memory store takes it, and well-formed: Redis stores UTF-8, so a lone
 * surrogate would come back as U+FFFD (a value changed, two keys met). Checked before anything is sent.
 */
function text(path: string, value: unknown): string {
  if (typeof value !== 'string' || !isWellFormed(value)) {
    throw new InvalidArgumentError(path, 'a well-formed string (no lone surrogate)', value);
  }
  return value;
}

/**
 * A lease or ttl the script adds to Redis TIME: a positive safe integer of ms up to 2^52, as the
 * memory store takes it, so the sum (TIME is ~2^40.6 ms) stays an exact Lua double.
 */
function ms(path: string, value: unknown): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > 2 ** 52) {
    throw new InvalidArgumentError(path, 'a positive safe integer of milliseconds (at most 2^52)', value);
  }
  return String(value);
}
