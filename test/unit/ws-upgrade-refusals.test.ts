// Requests a gateway refuses before the WebSocket opens never take the node down: a request
// target no URL parser reads, an `origins` function that throws, and a peer that resets the
// connection right after its refused upgrade.
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createGateway, type GatewayEvent } from '../../src/ws/index.js';

/** Sends a raw upgrade request and answers the status line (or '' when the peer reset first). */
function rawUpgrade(
  port: number,
  target: string,
  headers: Record<string, string> = {},
  reset = false,
): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.write(
        `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
      );
      if (reset) {
        socket.resetAndDestroy();
        resolve('');
      }
    });
    let text = '';
    socket.on('data', (d) => {
      text += String(d);
      if (text.includes('\r\n')) {
        resolve(text.split('\r\n')[0] ?? '');
        socket.destroy();
      }
    });
    socket.on('close', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('error', () => resolve(''));
  });
}

describe('refused upgrades', () => {
  it('answer 400/403/404 and leave the node serving', async () => {
    const events: GatewayEvent[] = [];
    const gateway = await createGateway({
      port: 0,
      origins: (origin) => {
        if (origin === 'https://boom.example') throw new Error('origin check bug');
        return origin === 'https://ok.example';
      },
      observer: (e) => events.push(e),
    });
    const port = gateway.port as number;
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      expect(await rawUpgrade(port, '//')).toBe('HTTP/1.1 400 Bad Request');
      expect(await rawUpgrade(port, '/', { Origin: 'https://boom.example' })).toBe(
        'HTTP/1.1 400 Bad Request',
      );
      expect(await rawUpgrade(port, '/', { Origin: 'https://evil.example' })).toBe('HTTP/1.1 403 Forbidden');
      expect(await rawUpgrade(port, '/other')).toBe('HTTP/1.1 404 Not Found');
      for (let i = 0; i < 50; i++) await rawUpgrade(port, '/other', {}, true);
      await new Promise((r) => setTimeout(r, 200));
      expect(uncaught).toEqual([]);
      expect(await rawUpgrade(port, '/', { Origin: 'https://ok.example' })).toBe(
        'HTTP/1.1 101 Switching Protocols',
      );
      expect(events.filter((e) => e.type === 'refused').length).toBeGreaterThanOrEqual(4);
    } finally {
      process.off('uncaughtException', onUncaught);
      await gateway.close({ drain: '100ms' });
    }
  });
});
