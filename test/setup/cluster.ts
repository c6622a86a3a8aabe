import type { TestProject } from 'vitest/node';
import { startCluster } from '../support/redis-servers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Ports of the 3-master Redis Cluster started for this run. */
    clusterPorts: number[];
  }
}

/** Global setup of the Redis project: a 3-master Redis Cluster on free ports, stopped at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startCluster();
  project.provide('clusterPorts', cluster.ports);
  return () => cluster.stop();
}
