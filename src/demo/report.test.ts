import { describe, expect, it } from 'vitest';
import type { StrategyRow } from './measure.js';
import { formatReport, formatTable, toJson, wrap } from './report.js';
import { runDemo } from './run-demo.js';
import { DEFAULT_SCENARIO } from './scenario.js';

describe('report', () => {
  const result = runDemo({ ...DEFAULT_SCENARIO, settlements: 10_000, players: 100 });

  it('aligns the table: every line as wide as the header rule', async () => {
    const lines = formatTable((await result).rows).split('\n');
    expect(lines).toHaveLength(2 + 6);
    const width = (lines[1] as string).length;
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(width);
    expect(lines[2]).toMatch(/^onceflow window \(capacity 4\)\s+10,000\s/);
  });

  it('shows how many settlements went to the wrong room next to their money', async () => {
    const r = await result;
    const lines = formatTable(r.rows).split('\n');
    const titles = (lines[0] as string).split(/\s{2,}/);
    expect(titles).toContain('wrong room');
    const flags = r.rows.find((x) => x.strategy === 'per-type flags') as StrategyRow;
    expect(flags.misbookedCount).toBeGreaterThan(0);
    const cells = (lines.find((l) => l.startsWith('per-type flags')) as string).trim().split(/\s+/);
    // strategy (2 words), applied, blocked, stale, lost, doubled, misbooked, wrong room, ...
    expect(cells[8]).toBe(flags.misbookedCount.toLocaleString('en-US'));
  });

  it('explains the rows, prints the capacity rule and the verdict', async () => {
    const text = formatReport(await result);
    expect(text).toContain('Capacity this log required: 4');
    expect(text).toContain('Rule (DESIGN §3.2): a FIFO window of capacity C never lets a repeat through');
    expect(text).toContain(
      'onceflow window (capacity 4): must show 0 lost, 0 doubled, 0 misbooked, 0 rooms off: it does.',
    );
    expect(text).toMatch(/OK: onceflow window \(capacity 4\) applied every settlement exactly once/);
    for (const line of text.split('\n').slice(6)) expect(line.length).toBeLessThanOrEqual(140);
  });

  it('counts in words that agree with the number (1 round, 1 player)', async () => {
    const tiny = formatReport(await runDemo({ ...DEFAULT_SCENARIO, settlements: 2, players: 1 }));
    expect(tiny).toMatch(/^onceflow demo: 2 settlements \(1 round\) by 1 player in \d+ rooms?, seed/);
    expect(formatReport(await result)).toMatch(
      /^onceflow demo: 10,000 settlements \(5,000 rounds\) by 100 players in /,
    );
  });

  it('says FAILED and what went wrong when the reference row is not exact', async () => {
    const r = await result;
    const broken: StrategyRow = {
      ...(r.rows[0] as StrategyRow),
      doubledCount: 1,
      moneyDoubled: 5,
      roomsOff: 1,
    };
    const text = formatReport({ ...r, rows: [broken, ...r.rows.slice(1)], ok: false });
    expect(text).toContain('IT DOES NOT');
    expect(text).toMatch(/FAILED: onceflow window \(capacity 4\): 0 lost, 5 doubled/);
  });

  it('gives JSON with config, requiredCapacity as a number, and the rows', async () => {
    const json = JSON.parse(JSON.stringify(toJson(await result)));
    expect(json.config).toEqual({ ...DEFAULT_SCENARIO, settlements: 10_000, players: 100 });
    expect(json.requiredCapacity).toBe(4);
    expect(json.rows).toHaveLength(6);
    expect(json.rows[0]).toMatchObject({
      id: 'onceflow-c4',
      moneyLost: 0,
      moneyDoubled: 0,
      moneyMisbooked: 0,
    });
    expect(json.ok).toBe(true);
  });

  it('wraps words with a hanging indent', () => {
    expect(wrap('aaa bbb ccc ddd', 8)).toEqual(['aaa bbb', '  ccc', '  ddd']);
    expect(wrap('', 8)).toEqual([]);
  });
});
