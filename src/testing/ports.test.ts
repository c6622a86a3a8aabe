import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, portFree, testPortRange } from './ports.js';

const saved = process.env['ONCEFLOW_TEST_PORTS'];
afterEach(() => {
  if (saved === undefined) delete process.env['ONCEFLOW_TEST_PORTS'];
  else process.env['ONCEFLOW_TEST_PORTS'] = saved;
});

describe('testPortRange', () => {
  it('reads ONCEFLOW_TEST_PORTS, inclusive, or the default', () => {
    expect(testPortRange({ ONCEFLOW_TEST_PORTS: '20000-20999' })).toEqual({ from: 20000, to: 20999 });
    expect(testPortRange({ ONCEFLOW_TEST_PORTS: ' 30000 - 30000 ' })).toEqual({ from: 30000, to: 30000 });
    expect(testPortRange({})).toEqual({ from: 20000, to: 39999 });
    expect(testPortRange({ ONCEFLOW_TEST_PORTS: '' })).toEqual({ from: 20000, to: 39999 });
  });

  it('refuses a malformed range, naming the variable', () => {
    for (const bad of ['20000', '20999-20000', '0-10', '1-70000', 'a-b', '20000-20999,21000-21999']) {
      expect(() => testPortRange({ ONCEFLOW_TEST_PORTS: bad })).toThrow(/ONCEFLOW_TEST_PORTS/);
    }
  });
});

describe('freePort', () => {
  it('hands out free ports within the range, never one twice in a row, and says when none is left', async () => {
    process.env['ONCEFLOW_TEST_PORTS'] = '23200-23203';
    const ports = [await freePort(), await freePort(), await freePort()];
    expect(new Set(ports).size).toBe(3);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(23200);
      expect(port).toBeLessThanOrEqual(23203);
      expect(await portFree(port)).toBe(true);
    }
    // The last one, taken by a server: none is left (the three above are handed out already).
    const last = [23200, 23201, 23202, 23203].find((p) => !ports.includes(p)) as number;
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(last, '127.0.0.1', resolve));
    try {
      await expect(freePort()).rejects.toThrow(/no free port in 23200-23203/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
