import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildDashboard, dashboardPanels } from './dashboard.js';
import { METRICS } from './definitions.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every series name a scrape can show: a histogram's as _bucket, _count and _sum. */
const exposed = new Set(
  METRICS.flatMap((d) =>
    d.type === 'histogram' ? [`${d.name}_bucket`, `${d.name}_count`, `${d.name}_sum`] : [d.name],
  ).map((n) => `onceflow_${n}`),
);

describe('the Grafana dashboard', () => {
  it('dashboards/onceflow.json is what scripts/gen-dashboard.mjs writes (run it after changing the metric table)', () => {
    const committed = JSON.parse(readFileSync(`${root}dashboards/onceflow.json`, 'utf8'));
    expect(committed).toEqual(buildDashboard());
  });

  it('has a panel for every metric, and every query names only metrics of the table', () => {
    const panels = dashboardPanels();
    const covered = new Set(panels.flatMap((p) => p.metrics));
    expect(METRICS.filter((d) => !covered.has(d.name)).map((d) => d.name)).toEqual([]);
    const unknown = panels
      .flatMap((p) => p.queries.flatMap((q) => q.expr.match(/onceflow_[a-z_]+/g) ?? []))
      .filter((n) => !exposed.has(n));
    expect(unknown).toEqual([]);
  });

  it('follows a custom prefix', () => {
    const exprs = dashboardPanels({ prefix: 'app_' }).flatMap((p) => p.queries.map((q) => q.expr));
    expect(exprs.every((e) => e.includes('app_') && !e.includes('onceflow_'))).toBe(true);
    expect(() => dashboardPanels({ prefx: 'a_' } as never)).toThrow(/did you mean `prefix`/);
  });

  it('docs/metrics.md documents every metric by its full name', () => {
    const docs = readFileSync(`${root}docs/metrics.md`, 'utf8');
    expect(METRICS.filter((d) => !docs.includes(`onceflow_${d.name}`)).map((d) => d.name)).toEqual([]);
  });
});

describe('the metric table', () => {
  it('follows Prometheus conventions: counters end in _total, units in names, labels never ids', () => {
    const bad = METRICS.filter(
      (d) =>
        (d.type === 'counter') !== d.name.endsWith('_total') ||
        (d.unit === 's' && !/_seconds(_total)?$/.test(d.name)) ||
        d.labels.some((l) => /owner|key|user|session|tenant|id$/.test(l.name)),
    ).map((d) => d.name);
    expect(bad).toEqual([]);
    expect(new Set(METRICS.map((d) => d.name)).size).toBe(METRICS.length);
    expect(new Set(METRICS.map((d) => d.otel)).size).toBe(METRICS.length);
  });
});
