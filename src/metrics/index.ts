/**
 * `onceflow/metrics`: onceflow's events as Prometheus metrics (prom-client) or OpenTelemetry
 * instruments (@opentelemetry/api), with the metric table the Grafana dashboard is generated from
 * (docs/metrics.md). Re-exports only.
 *
 * @module
 */

export { buildDashboard, type DashboardPanel, dashboardPanels } from './dashboard.js';
export { type LabelDefinition, METRICS, type MetricDefinition, STORE_CALL_BUCKETS } from './definitions.js';
export { createOtelMetrics, type OtelMetrics, type OtelMetricsOptions } from './otel.js';
export { createMetrics, type Metrics, type MetricsOptions } from './prometheus.js';
export type { ObservedEvent } from './recorder.js';
