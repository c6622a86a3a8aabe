import { describe, expect, it } from 'vitest';
import { runGatewayDemo } from './gateway-run.js';

describe('runGatewayDemo on the memory store', () => {
  it('onceflow rows are clean across moves and kills; the naive ones are not', async () => {
    const progress: number[] = [];
    const result = await runGatewayDemo({ clients: 12, messages: 40, seed: 3 }, (p) => progress.push(p.done));
    const sent = 12 * 40;
    for (const row of result.rows.filter((r) => r.gateway === 'onceflow'))
      expect(row).toMatchObject({ sent, once: sent, lost: 0, doubled: 0, outOfOrder: 0 });
    expect(result.ok).toBe(true);
    // Moves and kills made the clients reconnect, on both sides, on the same plan.
    expect(result.reconnects.onceflow).toBeGreaterThan(0);
    expect(result.reconnects.naive).toBeGreaterThan(0);
    // What the naive side lacks shows: a move or a kill cost it messages, or ran some twice.
    const naive = result.rows.filter((r) => r.gateway === 'naive');
    expect(naive.reduce((sum, r) => sum + r.lost + r.doubled + r.outOfOrder, 0)).toBeGreaterThan(0);
    for (const row of naive) expect(row.once + row.lost + row.doubled).toBe(sent);
    expect(Math.max(...progress)).toBeGreaterThan(0);
  });
});
