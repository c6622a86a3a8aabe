// The helpers ship in onceflow/testing; tests import them from here as before.
export {
  type ClusterNode,
  type ClusterOptions,
  freePort,
  pingable,
  type StartedCluster,
  type StartedRedis,
  startCluster,
  startRedis,
} from '../../src/testing/redis-servers.js';
