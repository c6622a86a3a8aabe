import { describe, expect, it } from 'vitest';
import { NODES, planGateway, WORKLOAD_MS } from './gateway-plan.js';

const config = { clients: 7, messages: 23, seed: 5 };

describe('planGateway', () => {
  it('is the same for the same seed, and another for another seed', () => {
    expect(planGateway(config)).toEqual(planGateway(config));
    expect(planGateway({ ...config, seed: 6 }).steps).not.toEqual(planGateway(config).steps);
  });

  it('sends and publishes 1..messages once per client, each in number order, within the workload', () => {
    const plan = planGateway(config);
    for (let client = 0; client < config.clients; client++) {
      const sent = plan.steps.flatMap((s) =>
        s.kind === 'send' && s.client === client ? Array.from({ length: s.count }, (_, k) => s.from + k) : [],
      );
      const published = plan.steps.flatMap((s) => (s.kind === 'publish' && s.client === client ? [s.n] : []));
      const all = Array.from({ length: config.messages }, (_, k) => k + 1);
      expect(sent).toEqual(all);
      expect(published).toEqual(all);
    }
    for (const [i, step] of plan.steps.entries()) {
      expect(step.atMs).toBeGreaterThanOrEqual(0);
      expect(step.atMs).toBeLessThan(WORKLOAD_MS);
      if (i > 0) expect(step.atMs).toBeGreaterThanOrEqual((plan.steps[i - 1] as { atMs: number }).atMs);
    }
    expect(plan.steps.filter((s) => s.kind === 'move')).toHaveLength(plan.moves);
    expect(plan.firstNode).toHaveLength(config.clients);
  });

  it('kills each node once, one at a time: it is back before the next kill', () => {
    for (let seed = 0; seed < 50; seed++) {
      const faults = planGateway({ ...config, seed }).steps.filter(
        (s) => s.kind === 'kill' || s.kind === 'restart',
      );
      expect(faults.map((s) => s.kind)).toEqual(['kill', 'restart', 'kill', 'restart', 'kill', 'restart']);
      const nodes = faults.map((s) => (s as { node: number }).node);
      expect(new Set(nodes).size).toBe(NODES);
      for (let k = 0; k < faults.length; k += 2) expect(nodes[k]).toBe(nodes[k + 1]);
    }
  });
});
