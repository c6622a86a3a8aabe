// The cyclic-result suite (test/support/model-suites/idempotency-cyclic.ts) on the memory store.
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { cyclicResultSuite } from '../support/model-suites/idempotency-cyclic.js';

cyclicResultSuite({ label: 'the memory store', store: () => memoryStore() });
