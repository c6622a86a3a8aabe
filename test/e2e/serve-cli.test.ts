// `onceflow serve` as users run it: the built CLI prints its address, answers /healthz and
// /metrics, stops on SIGTERM with 0, and refuses bad input with one line and the CLI's exit codes.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

/** Runs the built CLI to its end. */
function onceflow(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [cli, ...args], { cwd: root, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err !== null && typeof err.code !== 'number') reject(err);
      else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
  });
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

/** Starts `onceflow serve` and resolves with the address it printed. */
function serve(
  args: string[],
): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [cli, 'serve', ...args], { cwd: root });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (d) => {
      err += d;
    });
    child.stdout?.on('data', (d) => {
      out += d;
      const url = /listening on (http:\/\/\S+\/)/.exec(out)?.[1];
      if (url !== undefined) resolve({ child, url, exited });
    });
    void exited.then((code) => reject(new Error(`serve exited ${code} before listening: ${err}`)));
  });
}

describe('onceflow serve', () => {
  it('prints its address, answers /healthz and /metrics, and stops on SIGTERM with 0', async () => {
    const { child, url, exited } = await serve(['--port', '0']);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const health = await fetch(`${url}healthz`);
    expect(health.status).toBe(200);
    expect(health.headers.get('content-type')).toMatch(/application\/json/);
    const body = (await health.json()) as { ok: boolean; store: string; latencyMs: number };
    expect(body).toMatchObject({ ok: true, store: 'memory' });
    expect(body.latencyMs).toBeGreaterThanOrEqual(0);
    const metrics = await fetch(`${url}metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^onceflow_\w+/m);
    const page = await fetch(url);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('onceflow status');
    expect((await fetch(`${url}nothing-here`)).status).toBe(404);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);

  it('serves the gateway and the status endpoints on one port with --gateway', async () => {
    const { child, url, exited } = await serve(['--gateway', '--port', '0']);
    expect((await fetch(`${url}healthz`)).status).toBe(200);
    expect(await (await fetch(`${url}metrics`)).text()).toMatch(/^onceflow_gateway_connections 0$/m);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);

  it('refuses a bad port and an unknown option with exit 2', async () => {
    for (const args of [['--port', '70000'], ['--port', 'abc'], ['--port=-1'], ['--prot', '1']]) {
      const run = await onceflow(['serve', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(/^onceflow serve: .+\nRun `onceflow serve --help` for the options\.\n$/);
    }
  }, 30_000);

  it('says a port in use in one line, exit 1', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const run = await onceflow(['serve', '--port', String(port)]);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `onceflow: port ${port} on 127.0.0.1 is in use: stop what listens there or pick another --port\n`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 30_000);

  it('fails with exit 1 when the store cannot be reached', async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const run = await onceflow(['serve', '--port', '0', '--store', 'redis://127.0.0.1:1']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^onceflow: the store at redis:\/\/127\.0\.0\.1:1 did not answer/);
  }, 30_000);
});
