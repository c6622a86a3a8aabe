import { createPostgresStore } from '../../src/postgres/index.js';
import type { Store } from '../../src/store/store.js';
import { ledgerModelSuite } from '../support/model-suites/ledger.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('ledger_model');
// One store per retention (each holds its own statements), the same schema for all.
const stores = new Map<number | undefined, Store>();
const store = (keep?: number): Store => {
  let s = stores.get(keep);
  if (s === undefined) {
    s = createPostgresStore({
      pool,
      schema,
      journal: keep === undefined ? {} : { maxEntriesPerOwner: keep },
    });
    stores.set(keep, s);
  }
  return s;
};

// What an SQL array or JSON literal would have to escape: quotes, backslashes, braces, commas, NULL.
ledgerModelSuite(
  {
    label: 'PostgreSQL',
    store,
    // Applies run on separate pool connections and race: no call order is promised.
    inCallOrder: false,
  },
  { owners: ['a"b', 'ü'], scopes: ['{x,y}'], signatures: ['NULL', '"', '\\', '{}'], deltas: ['NULL'] },
);
