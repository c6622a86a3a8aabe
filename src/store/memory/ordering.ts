import { compareIntStrings, type OrderingStoreOps } from '../ordering.js';

/**
 * The in-memory implementation the memory store delegates to: the reference model the Redis
 * scripts are tested against. Each call is one synchronous block, so it is atomic.
 */
export function memoryOrderingOps(): Required<OrderingStoreOps> {
  const checkpoints = new Map<string, { revision: number; data: string }>();
  const gates = new Map<string, Map<string, { version: string; value: string }>>();
  // A generator's lease: its last timestamp, and the run holding it ('' for timestampAdvance's).
  const timestamps = new Map<string, { ms: number; run: string }>();
  return {
    async checkpointSave(name, revision, data) {
      const stored = checkpoints.get(name);
      if (stored !== undefined) {
        // The same save again (a re-sent command) is saved; another run's, of this revision or a
        // later one, makes it stale (as ordering-checkpoint.lua).
        if (revision === stored.revision && data === stored.data) return 'saved';
        if (revision <= stored.revision) return 'stale';
      }
      checkpoints.set(name, { revision, data });
      return 'saved';
    },
    async checkpointLoad(name) {
      const stored = checkpoints.get(name);
      return stored === undefined ? undefined : { ...stored };
    },
    async versionUpsert(gate, key, version, value) {
      let records = gates.get(gate);
      if (records === undefined) gates.set(gate, (records = new Map()));
      const stored = records.get(key);
      if (stored !== undefined) {
        const c = compareIntStrings(version, stored.version);
        if (c === 0) return { outcome: 'duplicate', version: stored.version };
        if (c < 0) return { outcome: 'stale', version: stored.version };
      }
      records.set(key, { version, value });
      return { outcome: 'applied', version };
    },
    async versionGet(gate, key) {
      const stored = gates.get(gate)?.get(key);
      return stored === undefined ? undefined : { ...stored };
    },
    async timestampAdvance(name, ms) {
      const stored = timestamps.get(name)?.ms ?? -1;
      if (ms <= stored) return stored;
      timestamps.set(name, { ms, run: '' });
      return ms;
    },
    async leaseRenew(name, run, ms, takeover) {
      // As snowflake-lease.lua.
      const stored = timestamps.get(name) ?? { ms: -1, run: '' };
      const held = stored.run === run || (takeover !== undefined && stored.ms <= takeover);
      if (!held) return { held: false, ms: stored.ms };
      const kept = Math.max(stored.ms, ms);
      timestamps.set(name, { ms: kept, run });
      return { held: true, ms: kept };
    },
  };
}
