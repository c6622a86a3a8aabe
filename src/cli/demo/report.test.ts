import { describe, expect, it } from 'vitest';
import { ttlCoveringEveryRepeat } from './defences.js';
import { generateLog } from './log.js';
import type { StrategyRow } from './measure.js';
import { DEFAULT_DEMO } from './options.js';
import { formatBytes, formatReport, formatTable, toJson, wrap } from './report.js';
import { runDemo } from './run.js';

describe('report', () => {
  const result = runDemo({ ...DEFAULT_DEMO, settlements: 10_000, players: 100 });

  it('fits 100 columns, aligned, dropping the least needed columns for a narrower terminal', async () => {
    const rows = (await result).rows;
    const lines = formatTable(rows).split('\n');
    expect(lines).toHaveLength(2 + 9);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(100);
    expect(lines[2]).toMatch(/^onceflow C=4\s/);
    const narrow = formatTable(rows, 80).split('\n');
    for (const line of narrow) expect(line.length).toBeLessThanOrEqual(80);
    expect(narrow[0]).toMatch(/^strategy\s+stale\s+lost\s+doubled\s+misbooked\s+memory$/);
  });

  it('keeps the table inside 100 columns on a terminal wider than that', async () => {
    for (const line of formatReport(await result, 200).split('\n'))
      expect(line.length).toBeLessThanOrEqual(100);
  });

  it('gives the covering SET NX EX row an id of its own, also when --ttl is the covering TTL', async () => {
    const small = { ...DEFAULT_DEMO, settlements: 2_000, players: 20 };
    const ttl = ttlCoveringEveryRepeat(generateLog(small)) / 1000;
    const r = await runDemo({ ...small, ttl });
    const ids = r.rows.map((x) => x.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain(`set-nx-ex-${ttl}`);
    expect(r.rows.find((x) => x.id === 'set-nx-ex-covering')?.strategy).toBe(`SET NX EX ${ttl} (covering)`);
    const text = formatReport(r).replace(/\n\s*/g, ' '); // the paragraphs unwrapped
    expect(text).toContain(
      `at ${ttl} s no repeat of this log came later. ${ttl} s is the TTL this log needed`,
    );
  });

  it('explains every word a newcomer meets, in one line each at 100 columns', async () => {
    const text = formatReport(await result);
    for (const word of [
      'window',
      'horizon',
      'stale',
      'overlap',
      'blocked',
      'misbooked',
      'rooms off',
      'memory',
    ]) {
      expect(text).toMatch(new RegExp(`^${word}\\s{2,}\\S`, 'm'));
    }
    // No meaning wraps: a continuation would be indented past the longest word.
    expect(text).not.toMatch(/^ {15}\S/m);
    for (const line of text.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });

  it('answers why not a unique index, with the bytes and the doubles of the TTL rows', async () => {
    const r = await result;
    const text = formatReport(r);
    expect(text).toContain('Why not a unique index? It is exact too');
    expect(text).toMatch(/SET NX EX forgets by time: at 60 s the [\d,]+ repeats that came later/);
    // The TTL's peak holds on the log's simulated rate, and the report says so.
    expect(text.replace(/\n\s*/g, ' ')).toMatch(
      /at its peak \([\d,]+ keys: at most TTL x rate, at this log's simulated 100 deliveries\/s/,
    );
    const unique = r.rows.find((x) => x.id === 'unique-index') as StrategyRow;
    const c4 = r.rows.find((x) => x.id === 'onceflow-c4') as StrategyRow;
    expect(unique.heldKeys).toBe(10_000);
    expect(c4.heldKeys).toBeLessThanOrEqual(100 * 4);
    expect(text).toContain('Capacity this log required (late replays aside): 4');
    expect(text).toMatch(/OK: onceflow C=4 applied every settlement exactly once/);
  });

  it('counts in words that agree with the number (1 round, 1 player)', async () => {
    const tiny = formatReport(await runDemo({ ...DEFAULT_DEMO, settlements: 2, players: 1 }));
    expect(tiny).toMatch(/^onceflow demo: 2 settlements \(1 round\) by 1 player in \d+ rooms?, seed/);
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
    expect(text).toMatch(/FAILED: onceflow C=4: 0 lost, 5 doubled/);
  });

  it('gives JSON with config, requiredCapacity as a number, and the rows; a URL password redacted', async () => {
    const r = await result;
    const json = JSON.parse(JSON.stringify(toJson(r)));
    expect(json.config).toEqual({ ...DEFAULT_DEMO, settlements: 10_000, players: 100 });
    expect(json.requiredCapacity).toBe(4);
    expect(json.rows).toHaveLength(9);
    expect(json.rows[0]).toMatchObject({
      id: 'onceflow-c4',
      moneyLost: 0,
      moneyDoubled: 0,
      moneyMisbooked: 0,
    });
    expect(json.ok).toBe(true);
    const withUrl = toJson({ ...r, config: { ...r.config, store: 'redis://:s3cret@h:6379' } });
    expect(JSON.stringify(withUrl)).not.toContain('s3cret');
  });

  it('wraps words with a hanging indent; prints bytes as a person reads them', () => {
    expect(wrap('aaa bbb ccc ddd', 8)).toEqual(['aaa bbb', '  ccc', '  ddd']);
    expect(wrap('', 8)).toEqual([]);
    expect([formatBytes(980), formatBytes(12_345), formatBytes(4_100_000)]).toEqual([
      '980 B',
      '12.3 kB',
      '4.1 MB',
    ]);
  });
});
