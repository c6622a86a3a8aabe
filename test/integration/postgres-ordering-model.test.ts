import { createPostgresStore } from '../../src/postgres/index.js';
import { orderingModelSuite } from '../support/model-suites/ordering.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('ord_model', 2);
const store = createPostgresStore({ pool, schema });

orderingModelSuite(
  { label: 'the Postgres store', store: () => store },
  { gates: ['g0', 'g1'], keys: ['k0', 'k1'], checkpoints: ['c0', 'c1'], clocks: ['s0', 's1'] },
);
