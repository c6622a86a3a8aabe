// The metrics the status endpoints serve: a prom-client registry of the process, fed by the
// observer of everything `onceflow serve` or `onceflow demo --serve` runs.
import type { Observer } from '../../core/observer.js';
import type { ObservedEvent } from '../../metrics/recorder.js';
import type { Store } from '../../store/store.js';
import { DemoFailure } from '../failure.js';
import type { StatusRegistry } from './status-handler.js';

type PromClient = typeof import('prom-client');

/** What the process attaches to the parts it runs; the shape of onceflow/metrics' `createMetrics`. */
export interface AttachedMetrics {
  readonly registry: StatusRegistry & import('prom-client').Registry;
  /** Every part's `observer`, the gateway's included. */
  readonly observer: Observer<ObservedEvent>;
  observeStore(store: Store): Store;
  readonly client: PromClient;
}

/** prom-client (an optional peer), or a one-line failure saying how to install it. */
export async function loadPromClient(command: string): Promise<PromClient> {
  try {
    const mod = (await import('prom-client')) as PromClient & { default?: PromClient };
    return mod.default ?? mod;
  } catch (cause) {
    if ((cause as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw cause;
    throw new DemoFailure(`\`${command}\` needs the prom-client package: npm install prom-client`, { cause });
  }
}

/**
 * A registry with onceflow's metrics attached (onceflow/metrics: every part's events, store call
 * latency, gateway connections), plus Node's default process metrics.
 */
export async function attachMetrics(command: string): Promise<AttachedMetrics> {
  const client = await loadPromClient(command);
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  // Loaded only once prom-client is known to be there: the metrics entry imports it.
  const { createMetrics } = await import('../../metrics/index.js');
  const metrics = createMetrics({ registry });
  return {
    registry,
    observer: metrics.observer,
    observeStore: (store) => metrics.observeStore(store),
    client,
  };
}
