// The three nodes of each side of the gateway demo, behind one shape: onceflow's gateway nodes on
// one shared store (memory or Redis) with a backend publisher, or the naive nodes with an
// in-process bus standing in for pub/sub. A kill ends a node as a crash looks to its clients; a
// restart brings a new node up on the same port, with the naive one's memory gone.
import type { Store } from '../../store/store.js';
import type { JsonValue } from '../../ws/frames.js';
import { abortGateway, createGateway, type Gateway } from '../../ws/gateway.js';
import { createPublisher } from '../../ws/publisher.js';
import { NaiveNode } from './gateway-naive.js';
import { NODES } from './gateway-plan.js';

/** The handler both sides run for each client message: `user` and the message's body. */
export type DemoHandler = (user: string, body: JsonValue) => Promise<void>;

/** Three nodes of one kind, started. */
export interface DemoCluster {
  /** The port of node `i` (kept across restarts). */
  port(node: number): number;
  alive(node: number): boolean;
  kill(node: number): Promise<void>;
  restart(node: number): Promise<void>;
  /** The backend's publish of message `n` to `user` (type `tick`, body `{ n }`). */
  publish(user: string, n: number): Promise<void>;
  /** Stops every node still up. */
  close(): Promise<void>;
}

// The message type clients send and the one the backend publishes.
export const SEND_TYPE = 'note';
const PUBLISH_TYPE = 'tick';
// A port freed by a kill is normally free again at once (Node listens with SO_REUSEADDR); another
// program taking it in between is retried for 2 s before the run fails.
const LISTEN_TRIES = 20;
const LISTEN_RETRY_MS = 100;

/** Node `i` of a kind: started on `port` (0 the first time), stopped as a crash. */
interface NodeKind<N> {
  start(port: number): Promise<N>;
  portOf(node: N): number;
  abort(node: N): Promise<void>;
  close(node: N): Promise<void>;
}

async function cluster<N>(kind: NodeKind<N>, publish: DemoCluster['publish']): Promise<DemoCluster> {
  const nodes: (N | undefined)[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < NODES; i++) {
      const node = await kind.start(0);
      nodes.push(node);
      ports.push(kind.portOf(node));
    }
  } catch (err) {
    // The nodes that did start would keep the process alive after the run failed.
    await Promise.all(nodes.map((n) => (n === undefined ? undefined : kind.abort(n))));
    throw err;
  }
  return {
    port: (i) => ports[i] as number,
    alive: (i) => nodes[i] !== undefined,
    async kill(i) {
      const node = nodes[i];
      nodes[i] = undefined;
      if (node !== undefined) await kind.abort(node);
    },
    async restart(i) {
      if (nodes[i] !== undefined) return;
      for (let attempt = 1; ; attempt++) {
        try {
          nodes[i] = await kind.start(ports[i] as number);
          return;
        } catch (err) {
          if ((err as { code?: unknown }).code !== 'EADDRINUSE' || attempt === LISTEN_TRIES) throw err;
          await new Promise((resolve) => setTimeout(resolve, LISTEN_RETRY_MS));
        }
      }
    },
    publish,
    async close() {
      await Promise.all(nodes.map((n) => (n === undefined ? undefined : kind.close(n))));
      nodes.fill(undefined);
    },
  };
}

/** onceflow's nodes on `store`; each client's token is its user. */
export function onceflowCluster(store: Store, handler: DemoHandler): Promise<DemoCluster> {
  const publisher = createPublisher({ store });
  const kind: NodeKind<Gateway> = {
    start: (port) =>
      createGateway({
        port,
        store,
        auth: (token) => token ?? null,
        handlers: { [SEND_TYPE]: (m) => handler(m.user, m.body) },
      }),
    portOf: (g) => g.port as number,
    abort: (g) => abortGateway(g),
    // The run is over: clients were closed first, so there is nothing to drain.
    close: (g) => g.close({ drain: '1s' }),
  };
  return cluster(kind, async (user, n) => {
    await publisher.publish(user, PUBLISH_TYPE, { n });
  });
}

/** The naive nodes; a publish reaches the nodes up at that moment, as pub/sub does. */
export function naiveCluster(handler: DemoHandler): Promise<DemoCluster> {
  const up = new Set<NaiveNode>();
  const kind: NodeKind<NaiveNode> = {
    async start(port) {
      const node = await NaiveNode.start(port, handler);
      up.add(node);
      return node;
    },
    portOf: (node) => node.port,
    async abort(node) {
      up.delete(node);
      await node.abort();
    },
    close: (node) => kind.abort(node),
  };
  return cluster(kind, async (user, n) => {
    for (const node of up) node.push(user, PUBLISH_TYPE, { n });
  });
}
