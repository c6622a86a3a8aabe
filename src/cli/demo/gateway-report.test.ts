import { describe, expect, it } from 'vitest';
import { formatGatewayReport, gatewayJson } from './gateway-report.js';
import type { GatewayDemoResult, GatewayRow } from './gateway-run.js';

const clean = { sent: 100, once: 100, lost: 0, doubled: 0, outOfOrder: 0 };
const rows = (onceflow: Omit<GatewayRow, 'gateway' | 'direction'>): GatewayRow[] => [
  { gateway: 'onceflow', direction: 'client-to-server', ...onceflow },
  { gateway: 'onceflow', direction: 'server-to-client', ...clean },
  { gateway: 'naive', direction: 'client-to-server', ...clean, once: 97, doubled: 3 },
  { gateway: 'naive', direction: 'server-to-client', ...clean, once: 90, lost: 10 },
];
const result = (ok: boolean, onceflow = clean): GatewayDemoResult => ({
  config: { clients: 10, messages: 10, seed: 1, store: 'redis://:secret@127.0.0.1:6379' },
  store: 'Redis',
  nodes: 3,
  kills: 3,
  moves: 20,
  rows: rows(onceflow),
  reconnects: { onceflow: 31, naive: 30 },
  ok,
  ms: 12_345,
});

describe('the gateway demo report', () => {
  it('shows every row and says OK when onceflow is clean', () => {
    const text = formatGatewayReport(result(true));
    expect(text).toMatch(/naive\s+server-to-client\s+100\s+90\s+10\s+0\s+0/);
    expect(text).toMatch(/onceflow\s+client-to-server\s+100\s+100\s+0\s+0\s+0/);
    expect(text).toContain('OK: onceflow');
    expect(text).toContain('(12.3 s)');
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });

  it('names what onceflow got wrong when it did', () => {
    const text = formatGatewayReport(result(false, { ...clean, once: 98, lost: 1, doubled: 1 }));
    expect(text).toContain('FAILED: onceflow client-to-server: 1 lost, 1 doubled, 0 out of order.');
  });

  it('--json: the rows and the verdict, the store URL redacted', () => {
    const json = gatewayJson(result(true));
    expect(json).toMatchObject({ ok: true, store: 'Redis', nodes: 3, kills: 3, moves: 20, ms: 12_345 });
    expect(json.rows).toHaveLength(4);
    expect(JSON.stringify(json)).not.toContain('secret');
  });
});
