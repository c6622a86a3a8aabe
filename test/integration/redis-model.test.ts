// The ledger model suite (test/support/model-suites/ledger.ts) on Redis, standalone and the
// 3-master cluster.
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { ledgerModelSuite } from '../support/model-suites/ledger.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

// Hash tags and the separators of the script's state strings; NUL, U+00FF (bytes C3 BF) and
// U+FFFD (what a lone surrogate would become); plain delta names the script adds as text alone.
const hazards = {
  owners: ['p{x}', 'a:b', 'ü'],
  scopes: ['ß'],
  signatures: ['s4', 'a', 'x|y', ',', '\u0000', '\ufffd', '1'],
  deltas: ['x-y_1'],
};

for (const mode of ['standalone', 'cluster'] as const) {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix(`model-${mode}`);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  ledgerModelSuite(
    {
      label: `Redis (${mode})`,
      store: (keep) =>
        createRedisStore({ client, prefix, journal: keep === undefined ? {} : { maxEntriesPerOwner: keep } }),
      runScale: mode === 'cluster' ? 0.5 : 1,
    },
    hazards,
  );
}
