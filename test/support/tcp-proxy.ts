import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a Redis that loses what production loses: `loseNextReply()` kills the
 * connection as the successful reply to the next script call (EVAL/EVALSHA) comes back (the
 * script ran, its reply never arrives), `dropNextScript()` kills it as the next script call goes out (it never
 * ran), and `hold()` keeps new connections waiting until `release()`, so a test decides when the
 * client's reconnect (and its re-send of what was in flight) goes through.
 */
export interface TcpProxy {
  readonly port: number;
  /** Connections killed so far. */
  readonly killed: number;
  loseNextReply(): void;
  dropNextScript(): void;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

const isScript = (data: Buffer) => /EVAL/i.test(data.toString('latin1'));

export async function startTcpProxy(upstreamPort: number): Promise<TcpProxy> {
  let loseReply = false;
  let dropScript = false;
  let holding = false;
  let killed = 0;
  const held: Socket[] = [];
  const open = new Set<Socket>();

  const wire = (client: Socket) => {
    const upstream = connect(upstreamPort, '127.0.0.1');
    open.add(client).add(upstream);
    let scriptSent = false;
    const kill = () => {
      killed++;
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (data) => {
      if (dropScript && isScript(data)) {
        dropScript = false;
        kill();
        return;
      }
      if (loseReply && isScript(data)) scriptSent = true;
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      // An error reply (NOSCRIPT after another test's SCRIPT FLUSH) means the script did not run:
      // passed on, and the next script call's reply is the one lost.
      if (scriptSent && data[0] === 0x2d) scriptSent = false;
      if (scriptSent && loseReply) {
        loseReply = false;
        scriptSent = false;
        kill();
        return;
      }
      client.write(data);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  };

  const server = createServer((client) => {
    if (holding) {
      client.pause();
      held.push(client);
    } else wire(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy: no port');
  return {
    port: address.port,
    get killed() {
      return killed;
    },
    loseNextReply: () => {
      loseReply = true;
    },
    dropNextScript: () => {
      dropScript = true;
    },
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const client of held.splice(0)) {
        client.resume();
        wire(client);
      }
    },
    async close() {
      for (const socket of [...open, ...held]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
