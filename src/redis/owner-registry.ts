// The ledger's registries on Redis: per ledger, the set of its owners, and per (ledger, scope) the
// set of owners with a share of it (keys.ts), so that ledger-wide journals and scope totals find
// every owner without a cross-slot script. An owner is registered before the first script that
// books under it runs (a crash in between leaves an owner registered with nothing booked, which
// adds 0); what this process has registered is remembered (owner-memo.ts), so a registration is
// rarely a round trip.
import { connectionGeneration, type Generation } from './connection-generation.js';
import type { RedisLike } from './eval.js';
import { ledgerOwnersKey, scopeOwnersKey } from './keys.js';
import { createOwnerMemo, type OwnerMemo, rememberScope } from './owner-memo.js';

// A registration that failed after its script had run is retried at 1, 2, 4 ... s, then every
// 32 s for as long as the process lives (until it succeeds, or the owner's own next batch made
// it): totals and journals must find what was booked. 32 s: a retry costs one SADD per
// registry key, and an outage longer than that is waited out without a storm of them.
const REGISTER_RETRY_MS = 1000;
const REGISTER_RETRY_MAX_MS = 32_000;

/** Whose registry entries a script that may book needs first: the owner's, and its scope's. */
export interface Registration {
  readonly memo: OwnerMemo;
  readonly ledger: string;
  readonly owner: string;
  readonly scope: string | undefined;
}

/** The registrations of one store. */
export interface OwnerRegistry {
  /** The client's connection generation (see connection-generation.ts). */
  readonly generation: Generation;
  /** What this process remembers of (ledger, owner): its keys and its registrations. */
  owner(ledger: string, owner: string): OwnerMemo;
  /**
   * Registers the owners (and their scopes) that this process has not registered yet, before the
   * script that books under them runs.
   */
  register(items: readonly Registration[]): Promise<void>;
  /**
   * Registers the owners again, after a script that has run found their state lost (Redis may
   * have lost the registrations with it): written again before any caller sees its answer, so the
   * registries stay a superset of the owners with a share. Never rejects: a failure is retried
   * later (the script's answers stand).
   */
  registerAgain(items: readonly Registration[]): Promise<void>;
}

/** The registry of the store on `client` (`redis`: its bounded client) under `prefix`. */
export function ownerRegistry(client: object, redis: RedisLike, prefix: string): OwnerRegistry {
  const owners = createOwnerMemo(prefix);
  const generation = connectionGeneration(client);

  async function register(items: readonly Registration[]): Promise<void> {
    // One SADD per registry key with every owner the batch adds to it (a batch of first contacts
    // is then a few commands, not one per owner and scope); marks run once all have succeeded.
    const members = new Map<string, Set<string>>();
    const marks: (() => void)[] = [];
    const add = (key: string, owner: string, mark: () => void) => {
      let set = members.get(key);
      if (set === undefined) members.set(key, (set = new Set()));
      set.add(owner);
      marks.push(mark);
    };
    for (const { memo, ledger, owner, scope } of items) {
      if (memo.generation !== generation.value) {
        // Made before a connection loss: the Redis that has them may be another one now.
        memo.generation = generation.value;
        memo.inLedger = false;
        memo.scopes.clear();
      }
      if (!memo.inLedger) {
        add(ledgerOwnersKey(prefix, ledger), owner, () => {
          memo.inLedger = true;
        });
      }
      if (scope !== undefined && !memo.scopes.has(scope)) {
        add(scopeOwnersKey(prefix, ledger, scope), owner, () => rememberScope(memo, scope));
      }
    }
    if (members.size === 0) return;
    await Promise.all([...members].map(([key, owners]) => redis.call('SADD', key, ...owners)));
    for (const mark of marks) mark();
  }

  // Retries the registrations of owners whose script has run, backing off, until they succeed or
  // the owners' own next batch made them (register() skips what is registered). Unref'd: a
  // process that exits meanwhile leaves them to the owners' next apply in any process that has
  // not registered them (docs/redis.md, *Per-scope totals without cross-slot scripts*).
  function registerLater(items: readonly Registration[], delayMs: number): void {
    const timer = setTimeout(() => {
      register(items).catch(() => registerLater(items, Math.min(delayMs * 2, REGISTER_RETRY_MAX_MS)));
    }, delayMs);
    timer.unref?.();
  }

  return {
    generation,
    owner: (ledger, owner) => owners.get(ledger, owner),
    register,
    async registerAgain(items) {
      for (const item of items) {
        item.memo.inLedger = false;
        item.memo.scopes.clear();
      }
      try {
        await register(items);
      } catch {
        // The script has run: its answers stand (a rejection would make callers retry what
        // was applied, with new call numbers the replay check cannot recognise). The owners
        // stay unregistered here, so their next batch registers them before its script, and
        // the SADDs are retried meanwhile.
        registerLater(items, REGISTER_RETRY_MS);
      }
    },
  };
}
