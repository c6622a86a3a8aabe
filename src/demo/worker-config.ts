import type { ScenarioConfig } from './scenario.js';
import type { SharedBackend } from './shared-ledger.js';

/** What the coordinator passes to a worker process (as JSON in {@link WORKER_CONFIG_ENV}). */
export interface WorkerConfig {
  readonly scenario: ScenarioConfig;
  readonly backend: SharedBackend;
  readonly url: string;
  /** The run's own key prefix (Redis) or schema (PostgreSQL). */
  readonly namespace: string;
  readonly index: number;
  readonly workers: number;
  readonly outFile: string;
}

/**
 * The environment variable that carries a worker's {@link WorkerConfig}. Its own module: the
 * coordinator imports it without importing the worker script, which runs `main` when loaded.
 */
export const WORKER_CONFIG_ENV = 'ONCEFLOW_DEMO_WORKER';
