import type { LeaseReply, OrderingStoreOps, VersionUpsertReply } from '../store/ordering.js';
import { evalScript, type RedisLike } from './eval.js';
import { escapeId } from './keys.js';
import { scripts } from './scripts.generated.js';
import { isClosedClient, redisStoreError } from './store-error.js';

/**
 * The ordering operations on Redis (DESIGN §3.4), one key and one script each, so every call is
 * atomic and lands on one Cluster slot:
 *
 *   <prefix>{ord:<name>}:cp          hash    checkpoint: revision (r), snapshot JSON (d)
 *   <prefix>{vg:<gate>:<key>}:v      hash    version gate record: version (v), value (d)
 *   <prefix>{sf:<name>}:t            string  a snowflake generator's lease: 'ms|run' (last timestamp, holder)
 *
 * Names, gates and keys are escaped like every id of the store, so none can end a hash tag early.
 */
export function redisOrderingOps(client: RedisLike, prefix: string): Required<OrderingStoreOps> {
  const checkpointKey = (name: string) => `${prefix}{ord:${escapeId(name)}}:cp`;
  const versionKey = (gate: string, key: string) => `${prefix}{vg:${escapeId(gate)}:${escapeId(key)}}:v`;
  const timestampKey = (name: string) => `${prefix}{sf:${escapeId(name)}}:t`;
  // The loads are reads; every other operation is one script (see redisFailure).
  const guarded = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
    const closed = isClosedClient(client);
    try {
      return await fn();
    } catch (err) {
      const kind = operation === 'checkpointLoad' || operation === 'versionGet' ? 'read' : 'script';
      throw redisStoreError(operation, err, closed, kind);
    }
  };
  return {
    checkpointSave: (name, revision, data) =>
      guarded('checkpointSave', async () => {
        const [outcome] = (await evalScript(
          client,
          scripts.orderingCheckpoint,
          [checkpointKey(name)],
          [String(revision), data],
        )) as [string, string];
        return outcome as 'saved' | 'stale';
      }),
    checkpointLoad: (name) =>
      guarded('checkpointLoad', async () => {
        const [r, d] = (await client.call('HMGET', checkpointKey(name), 'r', 'd')) as (string | null)[];
        return r == null || d == null ? undefined : { revision: Number(r), data: d };
      }),
    versionUpsert: (gate, key, version, value) =>
      guarded('versionUpsert', async (): Promise<VersionUpsertReply> => {
        const [outcome, stored] = (await evalScript(
          client,
          scripts.versionGate,
          [versionKey(gate, key)],
          [version, value],
        )) as [VersionUpsertReply['outcome'], string];
        return { outcome, version: stored };
      }),
    versionGet: (gate, key) =>
      guarded('versionGet', async () => {
        const [v, d] = (await client.call('HMGET', versionKey(gate, key), 'v', 'd')) as (string | null)[];
        return v == null || d == null ? undefined : { version: v, value: d };
      }),
    leaseRenew: (name, run, ms, takeover) =>
      guarded('leaseRenew', async (): Promise<LeaseReply> => {
        const [held, stored] = (await evalScript(
          client,
          scripts.snowflakeLease,
          [timestampKey(name)],
          [String(ms), run, takeover === undefined ? '' : String(takeover)],
        )) as [number, string];
        return { held: held === 1, ms: Number(stored) };
      }),
    timestampAdvance: (name, ms) =>
      guarded('timestampAdvance', async () =>
        Number(await evalScript(client, scripts.snowflakeClock, [timestampKey(name)], [String(ms)])),
      ),
  };
}
