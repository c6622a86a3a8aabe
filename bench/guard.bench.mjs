// The lookup guard under a penetration flood (docs/guard.md): 90% of gets ask for keys that do not
// exist, against a fake backend that answers after a fixed 1 ms (a setTimeout: an indexed read on
// a nearby database). Guarded (createLookupGuard with a filter of the existing keys, defaults
// otherwise) vs the bare lookup. The throughput ratio is informative; the figures that matter are
// in the workload line: backend calls avoided and the share of gets answered without the backend,
// counted in one untimed pass per side (verify), which also checks every existing key got its value.
import { createLookupGuard } from '../dist/index.js';
import { prng } from './lib/workload.mjs';

const EXISTING = 10_000;
const GETS = 20_000;
const UNKNOWN_SHARE = 0.9;
// Gets in flight at once: a server handling 100 requests concurrently.
const CONCURRENCY = 100;
const LATENCY_MS = 1;

function backend() {
  const counter = { calls: 0 };
  const lookup = (key) => {
    counter.calls++;
    return new Promise((resolve) =>
      setTimeout(() => resolve(key.startsWith('user:') ? { id: key } : null), LATENCY_MS),
    );
  };
  return { counter, lookup };
}

function guarded() {
  const { counter, lookup } = backend();
  const guard = createLookupGuard({ lookup, known: { expected: EXISTING, falsePositiveRate: 0.01 } });
  for (let i = 0; i < EXISTING; i++) guard.add(`user:${i}`);
  return { counter, get: (key) => guard.get(key), guard };
}

function bare() {
  const { counter, lookup } = backend();
  return { counter, get: lookup };
}

// Runs the flood CONCURRENCY gets at a time; returns how many existing keys were answered null.
async function flood(state, keys) {
  let wrong = 0;
  for (let i = 0; i < keys.length; i += CONCURRENCY) {
    const batch = keys.slice(i, i + CONCURRENCY);
    const answers = await Promise.all(batch.map((k) => state.get(k)));
    answers.forEach((a, j) => {
      if (a === null && batch[j].startsWith('user:')) wrong++;
    });
  }
  return wrong;
}

async function run(state, shared) {
  await flood(state, shared.keys);
  return GETS;
}

const figures = {};
async function verify(name, make, shared) {
  const state = make();
  const wrong = await flood(state, shared.keys);
  if (wrong > 0) throw new Error(`${name}: ${wrong} existing keys answered null`);
  figures[name] = { calls: state.counter.calls, stats: state.guard?.stats() };
}

export default {
  name: 'guard',
  title: 'Lookup guard: a penetration flood (90% unknown keys), guarded vs the bare lookup',
  setup() {
    const random = prng(20261206);
    const keys = Array.from({ length: GETS }, () =>
      random() < UNKNOWN_SHARE
        ? `forged:${Math.floor(random() * 1e9)}`
        : `user:${Math.floor(random() * EXISTING)}`,
    );
    return { keys, unknown: keys.filter((k) => !k.startsWith('user:')).length };
  },
  describe: (s) => {
    const g = figures.guarded;
    const b = figures.bare;
    const pct = (x) => `${(x * 100).toFixed(1)}%`;
    if (g === undefined || b === undefined) return `${GETS} gets, ${s.unknown} of them for unknown keys`;
    const absorbed = g.stats.absentByFilter + g.stats.absentByNullCache;
    return (
      `${GETS.toLocaleString('en')} gets (${s.unknown.toLocaleString('en')} for unknown keys), ` +
      `${EXISTING.toLocaleString('en')} existing keys, backend latency ${LATENCY_MS} ms, ${CONCURRENCY} gets in flight; ` +
      `backend calls: bare ${b.calls.toLocaleString('en')}, guarded ${g.calls.toLocaleString('en')} ` +
      `(${pct(1 - g.calls / b.calls)} avoided); answered without the backend: ${pct(absorbed / GETS)} of gets ` +
      `(filter ${g.stats.absentByFilter.toLocaleString('en')}, null cache ${g.stats.absentByNullCache.toLocaleString('en')}), ` +
      `${pct(absorbed / s.unknown)} of unknown-key gets; filter ${g.stats.known.bytes.toLocaleString('en')} bytes; ` +
      `every existing key answered with its value`
    );
  },
  comparisons: (shared) => [
    {
      name: 'penetration flood: guarded vs bare lookup',
      note: 'informative: the guard degrades within the first 100 answers, then absorbs unknown keys',
      sides: [
        {
          id: 'guarded',
          label:
            'createLookupGuard({ lookup, known: { expected: 10_000, falsePositiveRate: 0.01 } }).get(key)',
          prepare: guarded,
          run: (state) => run(state, shared),
          verify: () => verify('guarded', guarded, shared),
        },
        {
          id: 'bare',
          label: 'lookup(key): 1 ms per call',
          prepare: bare,
          run: (state) => run(state, shared),
          verify: () => verify('bare', bare, shared),
        },
      ],
    },
  ],
};
