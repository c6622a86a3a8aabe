// The helpers ship in onceflow/testing; tests import them from here, one path for every test.
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
