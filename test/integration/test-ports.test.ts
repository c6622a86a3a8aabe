// ONCEFLOW_TEST_PORTS confines every port the fault helpers listen on (docs/testing.md): a
// server's, a cluster node's and its bus's, a proxy's.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startCluster } from '../support/redis-servers.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const exec = promisify(execFile);
const saved = process.env['ONCEFLOW_TEST_PORTS'];
afterEach(() => {
  if (saved === undefined) delete process.env['ONCEFLOW_TEST_PORTS'];
  else process.env['ONCEFLOW_TEST_PORTS'] = saved;
});

describe('ONCEFLOW_TEST_PORTS', () => {
  it('confines a cluster (nodes and buses) and its proxies to the range', async () => {
    // A range of 100 ports no other test of this run asks for (they use the default or their own).
    const from = 24_000 + 100 * Math.floor(Math.random() * 50);
    process.env['ONCEFLOW_TEST_PORTS'] = `${from}-${from + 99}`;
    const inRange = (port: number) => port >= from && port <= from + 99;
    const cluster = await startCluster({ replicas: 1, proxied: true });
    try {
      const nodes = (await exec('redis-cli', ['-p', String(cluster.ports[0]), 'cluster', 'nodes'])).stdout;
      // `ip:port@bus` per node: the announced (proxy) port and the bus port.
      const announced = [...nodes.matchAll(/:(\d+)@(\d+)/g)].flatMap((m) => [Number(m[1]), Number(m[2])]);
      expect(announced).toHaveLength(12);
      const all = [...cluster.ports, ...announced];
      expect(all.filter((port) => !inRange(port))).toEqual([]);
      const proxy = await startTcpProxy(cluster.ports[0] as number);
      expect(inRange(proxy.port)).toBe(true);
      await proxy.close();
    } finally {
      await cluster.stop();
    }
  });
});
