// The metrics the status endpoints serve: a prom-client registry of the process, fed by the
// observer of everything `onceflow serve` or `onceflow demo --serve` runs.
import type { Observer } from '../../core/observer.js';
import type { Store } from '../../store/store.js';
import type { GatewayEvent } from '../../ws/events.js';
import { DemoFailure } from '../failure.js';
import type { StatusRegistry } from './status-handler.js';

type PromClient = typeof import('prom-client');

/** What the process attaches to the parts it runs; the shape of onceflow/metrics' `createMetrics`. */
export interface AttachedMetrics {
  readonly registry: StatusRegistry & import('prom-client').Registry;
  readonly observer: Observer;
  observeStore(store: Store): Store;
  /** For createGateway's `onEvent`. */
  readonly gatewayEvents: (event: GatewayEvent) => void;
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
 * A registry with onceflow's metrics attached: ledger outcomes, store call latency and gateway
 * connections, plus Node's default process metrics.
 */
export async function attachMetrics(command: string): Promise<AttachedMetrics> {
  const client = await loadPromClient(command);
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const { observeStore } = await import('../../store/observe-store.js');
  const applies = new client.Counter({
    name: 'onceflow_ledger_applies_total',
    help: 'Ledger applies by outcome (applied, duplicate, stale, failed).',
    labelNames: ['ledger', 'outcome'],
    registers: [registry],
  });
  const calls = new client.Histogram({
    name: 'onceflow_store_call_duration_seconds',
    help: 'Store calls by store and operation.',
    labelNames: ['store', 'op'],
    // 0.1 ms (memory) to 1 s (a Redis in trouble): the store latencies worth telling apart.
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1],
    registers: [registry],
  });
  const connections = new client.Gauge({
    name: 'onceflow_gateway_connections',
    help: 'WebSocket connections open on this node.',
    registers: [registry],
  });
  const observer: Observer = (event) => {
    if (event.part === 'ledger' && event.type === 'apply')
      applies.inc({ ledger: event.ledger, outcome: event.outcome });
    else if (event.part === 'store')
      calls.observe({ store: event.store, op: event.operation }, event.durationMs / 1000);
  };
  const open = new Set<number>();
  const gatewayEvents = (event: GatewayEvent) => {
    if (event.type !== 'state') return;
    if (event.state === 'open') open.add(event.connection);
    else if (event.state === 'closed') open.delete(event.connection);
    connections.set(open.size);
  };
  return {
    registry,
    observer,
    observeStore: (store) => observeStore(store, observer),
    gatewayEvents,
    client,
  };
}
