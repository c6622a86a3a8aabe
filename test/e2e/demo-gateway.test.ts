// `onceflow demo --gateway` as users run it: the built CLI, real clients through three nodes on
// loopback with moves and node kills, onceflow's gateway next to the naive one.
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { demoRunKeysAt } from '../support/demo-run-keys.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

interface Run {
  pid: number;
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the built CLI and resolves with its exit code, output and duration. */
function onceflow(args: string[]): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== 'number') reject(err);
        else
          resolve({
            pid: child.pid ?? -1,
            code: err === null ? 0 : (err.code as number),
            stdout,
            stderr,
            ms: performance.now() - started,
          });
      },
    );
  });
}

interface Row {
  gateway: string;
  direction: string;
  sent: number;
  once: number;
  lost: number;
  doubled: number;
  outOfOrder: number;
}

const onceflowRows = (rows: Row[]) => rows.filter((r) => r.gateway === 'onceflow');
const naiveRows = (rows: Row[]) => rows.filter((r) => r.gateway === 'naive');

describe('onceflow demo --gateway (built CLI)', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('defaults on the memory store: onceflow loses, doubles and reorders nothing; the naive gateway does', async () => {
    const run = await onceflow(['demo', '--gateway', '--seed', '1', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ ok: true, store: 'memory', nodes: 3, kills: 3, moves: 100 });
    expect(result.config).toEqual({ clients: 50, messages: 100, seed: 1 });
    expect(result.rows).toHaveLength(4);
    for (const row of onceflowRows(result.rows))
      expect(row).toMatchObject({ sent: 5000, once: 5000, lost: 0, doubled: 0, outOfOrder: 0 });
    const naive = naiveRows(result.rows);
    expect(naive.reduce((sum, r) => sum + r.lost + r.doubled, 0)).toBeGreaterThan(0);
    // A run of seconds (10-20 s on an idle machine); the bound is for a loaded 2-core box.
    expect(run.ms).toBeLessThan(90_000);
  });

  it('--store redis://: clean too, and the run leaves no keys', async () => {
    const url = inject('redisUrl');
    const run = await onceflow([
      'demo',
      '--gateway',
      '--clients',
      '10',
      '--messages',
      '30',
      '--store',
      url,
      '--json',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.store).toBe('Redis');
    for (const row of onceflowRows(result.rows))
      expect(row).toMatchObject({ sent: 300, once: 300, lost: 0, doubled: 0, outOfOrder: 0 });
    expect(await demoRunKeysAt(url, run.pid)).toEqual([]);
  });

  it('the report as text, and options of the other demo refused (exit 2)', async () => {
    const refused = await onceflow(['demo', '--gateway', '--players', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('`--players` to be left out with --gateway');
    const text = await onceflow(['demo', '--gateway', '--clients', '4', '--messages', '10', '--seed', '2']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^onceflow\s+client-to-server\s+40\s+40\s+0\s+0\s+0$/m);
    expect(text.stdout).toContain('OK: onceflow');
  });
});
