// The helpers ship in onceflow/testing; tests import them from here as before.
export {
  freePort,
  pingable,
  type StartedRedis,
  startCluster,
  startRedis,
} from '../../src/testing/redis-servers.js';
