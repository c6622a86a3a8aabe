// The CLI's own edges: credentials never printed, a TLS mismatch failing quickly, and the version
// and help spellings users type. Runs the built CLI as demo.test.ts does.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the built CLI and resolves with its exit code, output and duration. */
function onceflow(args: string[]): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== 'number') reject(err);
        else
          resolve({
            code: err === null ? 0 : (err.code as number),
            stdout,
            stderr,
            ms: Date.now() - started,
          });
      },
    );
  });
}

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** A password no output can contain by chance. */
const SECRET = `s3cret-${randomBytes(6).toString('hex')}`;

/** The shared Redis's URL with user info (and query) added. */
function withCredentials(url: string, userInfo: string, query = ''): string {
  const u = new URL(url);
  return `${u.protocol}//${userInfo}@${u.host}${u.pathname === '/' ? '' : u.pathname}${query}`;
}

const demo = (url: string, ...more: string[]) =>
  onceflow(['demo', '--settlements', '2000', '--store', url, ...more]);

describe('onceflow demo never prints a password', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('a refused AUTH names the URL with the password replaced and the user kept', async () => {
    const url = withCredentials(inject('redisUrl'), `onceflow-test-user:${SECRET}`);
    const run = await demo(url);
    expect(run.code).toBe(1);
    const shown = url.replace(SECRET, '***');
    expect(run.stderr.trim()).toBe(
      `onceflow: cannot connect to Redis at ${shown}: WRONGPASS invalid username-password pair or user is disabled.`,
    );
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it('an unreachable server, a password-only URL: redacted', async () => {
    const url = `redis://:${SECRET}@127.0.0.1:${await closedPort()}`;
    const run = await demo(url);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `cannot connect to Redis at ${url.replace(SECRET, '***')}: connect ECONNREFUSED`,
    );
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it('an invalid URL is echoed in the option error, redacted, in the user info and the query', async () => {
    for (const url of [
      `redis://app:${SECRET}@127.0.0.1:99999`,
      `redis://app:${SECRET}@127.0.0.1:6379/abc`,
      `http://app:${SECRET}@127.0.0.1:6379`,
      `app:${SECRET}@127.0.0.1:6379`,
      `redis://127.0.0.1:99999?password=${SECRET}`,
    ]) {
      const run = await demo(url);
      expect([url, run.code]).toEqual([url, 2]);
      expect(run.stderr).toContain('Expected `--store` to be memory, a Redis URL');
      expect(run.stderr).toContain(url.replace(SECRET, '***'));
      expect(run.stderr).not.toContain(SECRET);
    }
  });

  it('a run that works (--json): the password is in no output', async () => {
    // The shared server's default user has no password: AUTH with one is accepted (ioredis warns).
    for (const url of [
      withCredentials(inject('redisUrl'), `:${SECRET}`),
      `${inject('redisUrl')}?password=${SECRET}`,
    ]) {
      const run = await demo(url, '--json');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout).store).toBe('Redis');
      expect(run.stdout + run.stderr).not.toContain(SECRET);
    }
  });
});

describe('onceflow demo and TLS that does not match', () => {
  it('rediss:// against the plain shared Redis: fails within the 3 s connect timeout, naming the URL', async () => {
    // ioredis's own timeout is 10 s.
    const plain = new URL(inject('redisUrl'));
    const url = `rediss://app:${SECRET}@${plain.host}`;
    const run = await demo(url);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`onceflow: cannot connect to Redis at rediss://app:***@${plain.host}: `);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    expect(run.ms).toBeLessThan(10_000);
  });
});

describe('onceflow -v and onceflow help', () => {
  it('-v prints what --version prints', async () => {
    const [short, long] = await Promise.all([onceflow(['-v']), onceflow(['--version'])]);
    expect(short).toMatchObject({ code: 0, stdout: long.stdout, stderr: '' });
    expect(short.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('help and help demo print what --help and demo --help print, exit 0', async () => {
    const [help, dashHelp, helpDemo, demoHelp] = await Promise.all([
      onceflow(['help']),
      onceflow(['--help']),
      onceflow(['help', 'demo']),
      onceflow(['demo', '--help']),
    ]);
    expect(help).toMatchObject({ code: 0, stdout: dashHelp.stdout, stderr: '' });
    expect(help.stdout).toContain('-v, --version');
    expect(helpDemo).toMatchObject({ code: 0, stdout: demoHelp.stdout, stderr: '' });
    expect(helpDemo.stdout).toContain('--settlements N');
  });

  it('help of an unknown command exits 2 naming it', async () => {
    const run = await onceflow(['help', 'dmeo']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('unknown command "dmeo"');
  });
});
