// onceflow/metrics against a real Prometheus (Debian's `prometheus` and `promtool`): a settlement
// run drives ledger, limiter, idempotency, ordering and store traffic while Prometheus scrapes the
// registry every second; then every query of every panel of dashboards/onceflow.json is evaluated
// through Prometheus' HTTP API: each returns data, and each names only metrics the scrape holds.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import { createLookupGuard } from '../../src/guard/index.js';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createLimiter } from '../../src/limiter/limiter.js';
import { createMetrics, type Metrics } from '../../src/metrics/index.js';
import { VersionGate } from '../../src/ordering/version-gate.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { freePort } from '../../src/testing/ports.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { ReorderBuffer } from '../../src/windows/reorder-buffer.js';
import { SeenFilter } from '../../src/windows/seen-filter.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const PROMETHEUS = '/usr/bin/prometheus';
const PROMTOOL = '/usr/bin/promtool';

interface Target {
  panel: string;
  expr: string;
}

/** Every query of every panel of the committed dashboard. */
function dashboardTargets(): Target[] {
  const dashboard = JSON.parse(readFileSync(join(root, 'dashboards', 'onceflow.json'), 'utf8')) as {
    panels: { type: string; title: string; targets?: { expr: string }[] }[];
  };
  return dashboard.panels
    .filter((p) => p.type !== 'row')
    .flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A settlement run's traffic, one round: every part reports through `metrics`. */
function traffic(metrics: Metrics) {
  const store = metrics.observeStore(memoryStore());
  // A pre-check in front of `seen`: the buffer layer's "seen before?" (ledger_prechecks_total).
  const ledger = createLedger({
    store,
    capacity: 4,
    name: 'settlements',
    observer: metrics.observer,
    preCheck: new SeenFilter({ expected: 1000 }),
  });
  // A store whose applies fail with an unknown outcome: the uncertain calls of the consistency row.
  const lossy = metrics.observeStore(
    wrapStore(memoryStore(), {
      ledgerApply: () =>
        Promise.reject(new StoreError('ledgerApply', new Error('reply lost'), { outcome: 'unknown' })),
    }),
  );
  const lossyLedger = createLedger({
    store: lossy,
    capacity: 4,
    name: 'settlements',
    observer: metrics.observer,
  });
  const limiter = createLimiter({
    name: 'payouts',
    store,
    algorithm: 'fixed-window',
    limit: 3,
    window: '1s',
    observer: metrics.observer,
  });
  // Answers by promise, as a remote store does: its block cache answers repeated refusals.
  const remote = createLimiter({
    name: 'remote',
    store: metrics.observeStore(wrapStore(memoryStore(), {})),
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    observer: metrics.observer,
  });
  const down = createLimiter({
    name: 'degraded',
    store: metrics.observeStore(
      wrapStore(memoryStore(), {
        limiterTake: () => Promise.reject(new StoreError('limiterTake', new Error('down'))),
      }),
    ),
    degraded: 'allow',
    algorithm: 'gcra',
    limit: 10,
    window: '1s',
    observer: metrics.observer,
  });
  // The classic 2-counter estimate (granularity = window), over enough keys that some are sampled
  // (1 in 64): its deviation histogram.
  const bucketed = createLimiter({
    name: 'bucketed',
    store,
    algorithm: 'sliding-window',
    limit: 2,
    window: '1s',
    observer: metrics.observer,
  });
  // A lookup flooded with unknown ids: it degrades, and the filter answers them.
  const guard = createLookupGuard({
    name: 'players',
    lookup: async (id: string) => (id.startsWith('p') ? { id } : null),
    minSamples: 10,
    known: { expected: 1000 },
    observer: metrics.observer,
  });
  const idempotency = createIdempotency({
    store,
    name: 'payout-requests',
    observer: metrics.observer,
    preCheck: new SeenFilter({ expected: 1000 }),
  });
  const gate = new VersionGate({ store, name: 'accounts', observer: metrics.observer });
  const buffer = new ReorderBuffer<number>({
    capacity: 4,
    gapTimeout: 'adaptive',
    overflow: 'advance',
    observer: metrics.observer,
  });
  let round = 0;
  let seq = 0;
  return async (): Promise<void> => {
    round++;
    for (let player = 0; player < 5; player++) {
      const entry = {
        owner: `p${player}`,
        signature: `r${round}|p${player}`,
        deltas: { coins: BigInt(player) },
      };
      expect(await ledger.seen(entry)).toBe(false); // skipped: never seen here
      await ledger.apply(entry);
      expect(await ledger.seen(entry)).toBe(true); // read-seen
      // At-least-once delivery: every settlement arrives twice.
      expect((await ledger.apply(entry)).outcome).toBe('duplicate');
      if (player === 0) expect((await ledger.resolve(entry)).outcome).toBe('duplicate');
      await limiter.take(`p${player}`);
      expect(await idempotency.seen(`r${round}|p${player}`)).toBe(false); // skipped
      await idempotency.run({ key: `r${round}|p${player}` }, () => player);
      expect(await idempotency.seen(`r${round}|p${player}`)).toBe(true); // read-seen
      await idempotency.run({ key: `r${round}|p${player}` }, () => player);
    }
    await lossyLedger
      .apply({ owner: 'p0', signature: `lost-${round}`, deltas: { coins: 1n } })
      .catch(() => {});
    for (let i = 0; i < 3; i++) await remote.take('hot');
    for (let k = 0; k < 256; k++) await bucketed.take(`u${k}`);
    for (let k = 0; k < 20; k++) await guard.get(k % 10 === 0 ? `p${k}` : `forged-${round}-${k}`);
    await down.take('any');
    await gate.upsert('a1', round, { round });
    await gate.upsert('a1', round, { round });
    // Out of order: the second of each pair first; every fifth round leaves a hole the next overflows.
    const base = seq;
    if (round % 5 === 0) {
      buffer.push(base + 1, base + 1);
      seq = base + 6;
      buffer.push(base + 6, base + 6);
    } else {
      buffer.push(base + 1, base + 1);
      buffer.push(base, base);
      seq = base + 2;
    }
  };
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

describe('onceflow/metrics scraped by a real Prometheus', () => {
  const metrics = createMetrics();
  let server: Server;
  let prometheus: ChildProcess | undefined;
  let dir: string;
  let api: string;
  let stopTraffic = false;
  let trafficDone: Promise<void> = Promise.resolve();
  let promLog = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/metrics') return void res.writeHead(404).end();
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'onceflow-prometheus-'));
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'scrape_configs:',
        '  - job_name: onceflow',
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr?.on('data', (chunk: Buffer) => {
      promLog = (promLog + chunk.toString()).slice(-4000);
    });
    const round = traffic(metrics);
    trafficDone = (async () => {
      while (!stopTraffic) {
        await round();
        await sleep(100);
      }
    })();
    await waitFor(
      'the scrape target to be up',
      async () => {
        const body = (await (await fetch(`${api}/api/v1/targets`)).json()) as {
          data: { activeTargets: { health: string }[] };
        };
        return body.data.activeTargets[0]?.health === 'up' ? true : undefined;
      },
      20_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nprometheus stderr:\n${promLog}`);
    });
  });

  afterAll(async () => {
    stopTraffic = true;
    await trafficDone;
    if (prometheus !== undefined && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus?.once('exit', r));
      prometheus.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (prometheus.exitCode === null) prometheus.kill('SIGKILL');
    }
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every panel query of dashboards/onceflow.json with data, naming only scraped metrics', async () => {
    const targets = dashboardTargets();
    expect(targets.length).toBeGreaterThan(30);
    const scraped = new Set(
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => l.replace(/[{ ].*$/, '')),
    );
    const missing = targets.flatMap((t) =>
      (t.expr.match(/onceflow_[a-z_]+/g) ?? []).filter((n) => !scraped.has(n)).map((n) => `${t.panel}: ${n}`),
    );
    expect(missing).toEqual([]);
    // rate() needs two samples of a series: keep asking until every query answers (a second or two
    // of scrapes after the target is up), then report the ones that still do not.
    let empty: string[] = [];
    await waitFor(
      'every panel query to return data',
      async () => {
        empty = [];
        for (const t of targets) {
          const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(t.expr)}`);
          const body = (await res.json()) as { status: string; error?: string; data?: { result: unknown[] } };
          // A query Prometheus refuses (bad PromQL) is reported as one that answered nothing.
          if (body.status !== 'success') empty.push(`${t.panel}: ${t.expr}: ${body.error}`);
          else if ((body.data?.result.length ?? 0) === 0) empty.push(`${t.panel}: ${t.expr}`);
        }
        return empty.length === 0 ? true : undefined;
      },
      20_000,
    ).catch(() => undefined);
    expect(empty).toEqual([]);
  });

  it('a scrape passes promtool check metrics', async () => {
    const text = await (
      await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)
    ).text();
    expect(text).toContain('onceflow_ledger_applies_total{ledger="settlements",outcome="duplicate"}');
    // Exits non-zero (execFileSync throws, with promtool's findings) on any problem.
    execFileSync(PROMTOOL, ['check', 'metrics'], { input: text, stdio: ['pipe', 'pipe', 'pipe'] });
  });
});
