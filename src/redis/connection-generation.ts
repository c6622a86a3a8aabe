/**
 * A count of the connection losses of one client, shared by every store made on it. Each process
 * remembers which registry entries it has written (so a SADD is paid once, not per apply); a lost
 * connection may mean a Redis that restarted without its data, or a failover to a replica that
 * had not received the latest writes, so what was remembered before it is written again.
 */
export interface Generation {
  value: number;
}

interface Emitter {
  on?(event: string, listener: (...args: unknown[]) => void): unknown;
  nodes?(role?: string): unknown[];
}

// One counter, and one set of listeners, per client: stores made on one client (one per test, per
// tenant, per ledger name) would otherwise each add theirs, past Node's listener warning.
const generations = new WeakMap<object, Generation>();

/**
 * The client's generation: bumped when its connection (ioredis `Redis`) or a connection to one of
 * its nodes (ioredis `Cluster`) closes, and when the cluster's node set changes. A client without
 * events (a minimal `call()` adapter) stays at 0: only the scripts' own detection of a lost owner
 * state then applies.
 */
export function connectionGeneration(client: object): Generation {
  let generation = generations.get(client);
  if (generation !== undefined) return generation;
  const counter: Generation = { value: 0 };
  generation = counter;
  generations.set(client, counter);
  const emitter = client as Emitter;
  if (typeof emitter.on !== 'function') return generation;
  const bump = () => {
    counter.value++;
  };
  const watch = (node: unknown) => (node as Emitter | undefined)?.on?.('close', bump);
  if ((client as { isCluster?: unknown }).isCluster === true) {
    emitter.on('+node', (node) => {
      watch(node);
      bump();
    });
    emitter.on('-node', bump);
    for (const node of emitter.nodes?.('all') ?? []) watch(node);
  } else {
    emitter.on('close', bump);
  }
  return generation;
}
