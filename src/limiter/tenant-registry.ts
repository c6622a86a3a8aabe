import { ClosedError, InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit, withinLimit } from '../core/limits.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString, nonEmptyStringArg } from '../core/validate.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import type { Decision } from '../windows/limits/decision.js';
import { tenantNamespace } from './keys.js';
import { createLimiter, type LimiterOptions } from './limiter.js';
import type { Limiter } from './types.js';

/** Options of {@link createTenantRegistry}. */
export interface TenantRegistryOptions {
  /** The store of every tenant's limiter. Default: an in-process memory store. */
  store?: Store;
  /**
   * The `limiter` name its tenants' limiters report to their observers (a metric label).
   * Default `'tenants'`.
   */
  name?: string;
  /**
   * Tenants whose limiters report as `<name>/<tenant>`, a metric label of their own; every other
   * tenant reports as `<name>`. A bounded set you choose (your largest customers), never every
   * tenant: a label per tenant is a series per tenant. At most 100.
   */
  labeledTenants?: readonly string[];
}

const REGISTRY_OPTIONS = keysOf<TenantRegistryOptions>({ store: true, name: true, labeledTenants: true });
// The bound of `labeledTenants`: onceflow/metrics keeps at most 100 values per label by default
// (maxLabelValues), so a longer list would only spill into `other`.
const MAX_LABELED_TENANTS = 100;

/** A tenant's policy: the limiter options without the store (the registry's is used). */
export type TenantPolicy = Omit<LimiterOptions, 'store' | 'name'>;

/** Lifecycle events of a {@link TenantRegistry}. */
export type TenantEvent =
  | { readonly type: 'init'; readonly tenant: string; readonly replaced: boolean }
  | { readonly type: 'reset'; readonly tenant: string; readonly keys: number }
  | { readonly type: 'close'; readonly tenant: string }
  | { readonly type: 'degraded'; readonly tenant: string; readonly error: unknown };

/** Limiters per tenant, on one store, in key spaces no tenant can reach across. */
export interface TenantRegistry {
  /** Sets (or replaces) a tenant's policy. Its counters are kept unless the policy changes shape. */
  init(tenant: string, policy: TenantPolicy): void;
  /** `take` on the tenant's limiter. Rejects with `ERR_INVALID_ARGUMENT` for an unknown tenant. */
  take(
    tenant: string,
    key: string | Readonly<Record<string, string>>,
    options?: { cost?: number },
  ): Promise<Decision>;
  /** Clears this tenant's limiter state (every key of its namespace), and no other tenant's. */
  reset(tenant: string): Promise<number>;
  /** Ends the tenant: any later use of it (`init` included) throws `ERR_CLOSED`. */
  close(tenant: string): void;
  /** Subscribes to lifecycle events; returns the unsubscribe function. */
  on(listener: (event: TenantEvent) => void): () => void;
  /** Tenants initialised and not closed. */
  tenants(): string[];
}

/**
 * A registry of per-tenant limiters (the multi-tenant window registry of the seeds). Tenant ids
 * are escaped into their key space (`|t:<escaped id>`), so an id like `a:b`, `{x}` or `*` can
 * neither land in nor reset another tenant's keys.
 *
 * @example
 * ```ts
 * const tenants = createTenantRegistry({ store: memoryStore() });
 * tenants.init('acme', { algorithm: 'gcra', limit: 2, window: '1s' });
 * (await tenants.take('acme', 'user-1')).allowed; // true
 * (await tenants.take('acme', 'user-1')).allowed; // true
 * (await tenants.take('acme', 'user-1')).allowed; // false
 * await tenants.reset('acme'); // 1
 * (await tenants.take('acme', 'user-1')).allowed; // true
 * tenants.close('acme');
 * ```
 */
export function createTenantRegistry(options: TenantRegistryOptions = {}): TenantRegistry {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { store }', options);
  knownKeys('', options, REGISTRY_OPTIONS);
  const name =
    options.name === undefined
      ? 'tenants'
      : optionWithinLimit('name', nonEmptyString('name', options.name), 'nameBytes');
  const labeled = new Set<string>();
  if (options.labeledTenants !== undefined) {
    const list: unknown = options.labeledTenants;
    if (!Array.isArray(list) || list.length > MAX_LABELED_TENANTS)
      throw new InvalidOptionError(
        'labeledTenants',
        `an array of at most ${MAX_LABELED_TENANTS} tenant ids`,
        list,
      );
    for (const [i, t] of list.entries())
      labeled.add(
        optionWithinLimit(`labeledTenants[${i}]`, nonEmptyString(`labeledTenants[${i}]`, t), 'nameBytes'),
      );
  }
  const store = options.store ?? memoryStore();
  if (typeof store.limiterReset !== 'function' || typeof store.limiterTake !== 'function') {
    throw new InvalidOptionError(
      'store',
      'a store with limiter support (memoryStore(), createRedisStore())',
      store,
    );
  }
  const limiters = new Map<string, Limiter>();
  const closed = new Set<string>();
  const listeners = new Set<(event: TenantEvent) => void>();
  // A listener that throws cannot undo or break what was done (the state already changed, and a
  // degraded decision must still be returned): its error is rethrown on a microtask, not swallowed.
  const emit = (event: TenantEvent) => {
    for (const l of listeners) {
      try {
        l(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };
  const open = (tenant: unknown): string => {
    const id = withinLimit('tenant', nonEmptyStringArg('tenant', tenant), 'nameBytes');
    if (closed.has(id)) throw new ClosedError(`tenant ${JSON.stringify(id)}`);
    return id;
  };

  return {
    init(tenant, policy) {
      const id = open(tenant);
      if (!isPlainObject(policy))
        throw new InvalidArgumentError('policy', 'limiter options without store', policy);
      // The registry's store and the tenant's own key space are used: a policy's would be ignored.
      for (const field of ['store', 'name'] as const) {
        if ((policy as Record<string, unknown>)[field] !== undefined) {
          throw new InvalidArgumentError(
            `policy.${field}`,
            field === 'store'
              ? "absent: the registry's store is used"
              : 'absent: the tenant id names its limiter',
            (policy as Record<string, unknown>)[field],
          );
        }
      }
      let limiter: Limiter;
      try {
        limiter = createLimiter(
          { ...(policy as TenantPolicy), store, name: labeled.has(id) ? `${name}/${id}` : name },
          {
            namespace: tenantNamespace(id),
            onDegraded: (error) => emit({ type: 'degraded', tenant: id, error }),
          },
        );
      } catch (err) {
        // The policy is this call's argument: its fields are named as `policy.store` is above.
        if (!(err instanceof InvalidOptionError)) throw err;
        throw new InvalidArgumentError(`policy.${err.option}`, err.expected, err.got);
      }
      const replaced = limiters.has(id);
      limiters.set(id, limiter);
      emit({ type: 'init', tenant: id, replaced });
    },
    async take(tenant, key, takeOptions) {
      const id = open(tenant);
      const limiter = limiters.get(id);
      if (limiter === undefined)
        throw new InvalidArgumentError('tenant', 'a tenant passed to init() first', id);
      return limiter.take(key, takeOptions);
    },
    async reset(tenant) {
      const id = open(tenant);
      // This process's blocks and degraded-local counters of the tenant go with its counters in
      // the store (other processes: see BlockCache). Before the store's reset, so a store that
      // fails still leaves this process's part reset; and after it, for a refusal of the old
      // state answered while the reset ran (answers to takes sent before a clear are not cached).
      limiters.get(id)?.clearBlocks();
      const keys = await (store.limiterReset as (ns: string) => Promise<number>)(tenantNamespace(id));
      limiters.get(id)?.clearBlocks();
      emit({ type: 'reset', tenant: id, keys });
      return keys;
    },
    close(tenant) {
      const id = open(tenant);
      limiters.delete(id);
      closed.add(id);
      emit({ type: 'close', tenant: id });
    },
    on(listener) {
      if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'a function', listener);
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    tenants: () => [...limiters.keys()],
  };
}
