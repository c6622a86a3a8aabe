// The Grafana dashboard of onceflow/metrics, generated from the metric table (definitions.ts):
// scripts/gen-dashboard.mjs writes dashboards/onceflow.json from buildDashboard(), a test fails
// when the committed file differs, and test/integration/metrics-prometheus.test.ts evaluates every
// query of it against a real Prometheus.
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { METRICS, type MetricDefinition, metricDefinition } from './definitions.js';
import { prefixOption } from './options.js';

/** One panel: its row, title, Grafana unit and PromQL queries (with their legends). */
export interface DashboardPanel {
  readonly row: string;
  readonly title: string;
  readonly unit: string;
  readonly queries: readonly { readonly expr: string; readonly legend: string }[];
  /** The metrics (names without prefix) its queries read. */
  readonly metrics: readonly string[];
}

// Every rate is over 5 m: 20 samples at Prometheus' default 15 s scrape interval, so one missed
// scrape does not blank a panel, and short enough that a burst of stale answers shows within it.
const RANGE = '5m';
const CONSISTENCY = 'Consistency deviation';

const by = (labels: readonly string[]): string => (labels.length === 0 ? '' : ` by (${labels.join(', ')})`);
const legendOf = (labels: readonly string[]): string =>
  labels.length === 0 ? 'all' : labels.map((l) => `{{${l}}}`).join(' ');

function panelOf(def: MetricDefinition, prefix: string): DashboardPanel {
  const labels = def.labels.map((l) => l.name);
  const name = prefix + def.name;
  const metrics = [def.name];
  if (def.type === 'histogram') {
    const quantile = (q: number) => ({
      expr: `histogram_quantile(${q}, sum${by(['le', ...labels])} (rate(${name}_bucket[${RANGE}])))`,
      legend: `p${q * 100} ${legendOf(labels)}`,
    });
    const unit = def.unit === 's' ? 's' : 'percentunit';
    return { row: def.row, title: def.help, unit, queries: [quantile(0.5), quantile(0.99)], metrics };
  }
  if (def.type === 'gauge') {
    // A duration gauge is the largest across processes; a count gauge is their sum, unless each
    // process reports the whole figure (`across`).
    const agg = def.across ?? (def.unit === 's' ? 'max' : 'sum');
    return {
      row: def.row,
      title: def.help,
      unit: def.unit === 's' ? 's' : 'short',
      queries: [{ expr: `${agg}${by(labels)} (${name})`, legend: legendOf(labels) }],
      metrics,
    };
  }
  return {
    row: def.row,
    title: `${def.help} (per second)`,
    unit: def.unit === 's' ? 's' : 'ops',
    queries: [{ expr: `sum${by(labels)} (rate(${name}[${RANGE}]))`, legend: legendOf(labels) }],
    metrics,
  };
}

/** The consistency deviation panels (docs/metrics.md says what each means and when it pages). */
function consistencyPanels(prefix: string): DashboardPanel[] {
  const m = (name: string) => prefix + metricDefinition(name).name;
  return [
    {
      row: CONSISTENCY,
      title: 'Stale answers resolve left unknown (page above 0)',
      unit: 'short',
      queries: [
        {
          expr: `sum by (ledger) (increase(${m('ledger_resolves_total')}{outcome="unknown"}[${RANGE}]))`,
          legend: '{{ledger}}',
        },
      ],
      metrics: ['ledger_resolves_total'],
    },
    {
      row: CONSISTENCY,
      title: 'Ledger calls that may have applied (store outcome unknown)',
      unit: 'short',
      queries: [
        {
          expr: `sum by (ledger, operation) (increase(${m('ledger_uncertain_total')}[${RANGE}]))`,
          legend: '{{ledger}} {{operation}}',
        },
      ],
      metrics: ['ledger_uncertain_total'],
    },
    {
      row: CONSISTENCY,
      title: 'Bucketed window estimate minus the exact count, share of the limit (sampled keys)',
      unit: 'percentunit',
      queries: [0.01, 0.99].map((q) => ({
        expr: `histogram_quantile(${q}, sum by (le, limiter) (rate(${m('limiter_window_deviation_ratio')}_bucket[${RANGE}])))`,
        legend: `p${q * 100} {{limiter}}`,
      })),
      metrics: ['limiter_window_deviation_ratio'],
    },
    {
      row: CONSISTENCY,
      title: 'Limiter answers from the local view, not the store (share)',
      unit: 'percentunit',
      queries: [
        {
          expr: `sum by (limiter) (rate(${m('limiter_decisions_total')}{reason=~"blocked|degraded-.*"}[${RANGE}])) / sum by (limiter) (rate(${m('limiter_decisions_total')}[${RANGE}]))`,
          legend: '{{limiter}}',
        },
      ],
      metrics: ['limiter_decisions_total'],
    },
    {
      row: CONSISTENCY,
      title: 'Gateway limit answers from the node’s block cache, not the store (share)',
      unit: 'percentunit',
      queries: [
        {
          expr: `sum(rate(${m('gateway_limit_decisions_total')}{reason="blocked"}[${RANGE}])) / sum(rate(${m('gateway_limit_decisions_total')}[${RANGE}]))`,
          legend: 'blocked',
        },
      ],
      metrics: ['gateway_limit_decisions_total'],
    },
    {
      row: CONSISTENCY,
      title: 'False heartbeat timeouts suppressed (node stalls discounted)',
      unit: 'short',
      queries: [
        {
          expr: `sum(increase(${m('gateway_heartbeat_spared_total')}[${RANGE}]))`,
          legend: 'spared',
        },
      ],
      metrics: ['gateway_heartbeat_spared_total'],
    },
    {
      row: CONSISTENCY,
      title: 'Sequence numbers skipped by forced advances',
      unit: 'short',
      queries: [
        { expr: `sum by (cause) (increase(${m('reorder_skipped_total')}[${RANGE}]))`, legend: '{{cause}}' },
      ],
      metrics: ['reorder_skipped_total'],
    },
    {
      row: CONSISTENCY,
      title: 'Resumes that could not recover the missed messages (share)',
      unit: 'percentunit',
      queries: [
        {
          expr: `sum(rate(${m('gateway_resumes_total')}{recovered="false"}[${RANGE}])) / sum(rate(${m('gateway_resumes_total')}[${RANGE}]))`,
          legend: 'recovered=false',
        },
      ],
      metrics: ['gateway_resumes_total'],
    },
  ];
}

/** Every panel of the dashboard, in order: consistency deviation first, then one per metric. */
export function dashboardPanels(options: { prefix?: string } = {}): DashboardPanel[] {
  const prefix = dashboardPrefix(options);
  return [...consistencyPanels(prefix), ...METRICS.map((def) => panelOf(def, prefix))];
}

function dashboardPrefix(options: unknown): string {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an options object', options);
  knownKeys('', options, keysOf<{ prefix?: string }>({ prefix: true }));
  return prefixOption(
    options.prefix,
    /^[a-zA-Z_:][a-zA-Z0-9_:]*$/,
    'the Prometheus name prefix given to createMetrics',
    'onceflow_',
  );
}

// Grafana's variable syntax, not a template literal: Grafana substitutes the chosen data source.
const DATASOURCE = { type: 'prometheus', uid: '$' + '{datasource}' } as const;

// Grafana's grid is 24 columns wide: two panels of 12 side by side, 8 rows high.
const WIDTH = 12;
const HEIGHT = 8;

/**
 * The Grafana dashboard JSON of onceflow's metrics (dashboards/onceflow.json is this with the
 * default prefix): a row per part, a panel per metric, consistency deviation on top, every query
 * on a `datasource` variable of type Prometheus. `prefix`: the one given to `createMetrics`.
 *
 * @example
 * ```ts
 * import { buildDashboard } from 'onceflow/metrics';
 * const dashboard = buildDashboard();
 * dashboard.uid; // 'onceflow'
 * ```
 */
export function buildDashboard(options: { prefix?: string } = {}): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  let column = 0;
  let row: string | undefined;
  for (const panel of dashboardPanels(options)) {
    if (panel.row !== row) {
      if (column !== 0) y += HEIGHT;
      column = 0;
      row = panel.row;
      panels.push({
        id: id++,
        type: 'row',
        title: row,
        collapsed: false,
        gridPos: { h: 1, w: 24, x: 0, y },
        panels: [],
      });
      y += 1;
    }
    panels.push({
      id: id++,
      type: 'timeseries',
      title: panel.title,
      datasource: DATASOURCE,
      gridPos: { h: HEIGHT, w: WIDTH, x: column * WIDTH, y },
      fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
      options: { legend: { displayMode: 'list', placement: 'bottom', showLegend: true } },
      targets: panel.queries.map((q, i) => ({
        refId: String.fromCharCode(65 + i),
        datasource: DATASOURCE,
        expr: q.expr,
        legendFormat: q.legend,
      })),
    });
    column = (column + 1) % 2;
    if (column === 0) y += HEIGHT;
  }
  return {
    uid: 'onceflow',
    title: 'onceflow',
    description: 'Generated by scripts/gen-dashboard.mjs from onceflow/metrics: do not edit by hand.',
    tags: ['onceflow'],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: '10s',
    time: { from: 'now-1h', to: 'now' },
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Prometheus',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
        },
      ],
    },
    panels,
  };
}
