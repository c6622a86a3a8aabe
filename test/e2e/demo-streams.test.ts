// `onceflow demo --redis URL --streams`: the settlements go through a Redis stream to consumer
// processes, 3 of them SIGKILLed mid-run. Runs the built CLI as demo.test.ts does.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { demoRunKeysAt } from '../support/demo-run-keys.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

function onceflow(args: string[]): Promise<{ pid: number; code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [cli, ...args], { cwd: root }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== 'number') reject(err);
      else resolve({ pid: child.pid ?? -1, code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
  });
}

describe('onceflow demo --streams', () => {
  it('3 consumers, 3 kills: onceflow exact and deciding the exit code, the naive consumer not, no keys left', async () => {
    const url = inject('redisUrl');
    const run = await onceflow([
      'demo',
      '--settlements',
      '20000',
      '--json',
      '--redis',
      url,
      '--streams',
      '--workers',
      '3',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    const row = (id: string) => result.rows.find((r: { id: string }) => r.id === id);
    const streams = row('onceflow-streams-c4');
    expect(streams).toMatchObject({
      strategy: 'onceflow via Redis Streams (capacity 4, 3 consumers, 3 kills)',
      lostCount: 0,
      doubledCount: 0,
      misbookedCount: 0,
      roomsOff: 0,
      stale: 0,
    });
    // Every delivery decided as the in-process capacity-4 row decides it, kills notwithstanding.
    const memory = row('onceflow-c4');
    expect(streams.applied).toBe(memory.applied);
    expect(streams.blocked).toBe(memory.blocked);
    const naive = row('naive-streams');
    // The naive row reads a stream already whole: on a loaded machine its consumers may finish
    // before the third kill falls due (kills are 300 ms apart), and the row's name says the kills
    // that happened. Its log's own repeats are doubled with or without a kill.
    expect(naive.strategy).toMatch(/^naive stream consumer \(no dedup, 3 consumers, [0-3] kills\)$/);
    expect(naive.doubledCount + naive.lostCount).toBeGreaterThan(0);
    expect(naive.roomsOff).toBeGreaterThan(0);
    expect(await demoRunKeysAt(url, run.pid)).toEqual([]);
  }, 60_000);

  it('--streams needs --redis', async () => {
    const run = await onceflow(['demo', '--streams']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Expected `--streams` to be used together with `--redis`');
  });
});
