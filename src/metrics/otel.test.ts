// createOtelMetrics through the real @opentelemetry/api: a minimal hand-written MeterProvider
// (no SDK) set as the global one records every instrument created and every call made on it.
import {
  type Attributes,
  type Meter,
  type MeterProvider,
  type ObservableCallback,
  type ObservableResult,
  metrics as otel,
} from '@opentelemetry/api';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../ledger/ledger.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { METRICS } from './definitions.js';
import { createOtelMetrics } from './otel.js';

interface Created {
  kind: 'counter' | 'histogram' | 'gauge';
  name: string;
  unit: string | undefined;
  calls: { value: number; attributes: Attributes | undefined }[];
  callbacks: ObservableCallback[];
}

const created = new Map<string, Created>();

function instrument(kind: Created['kind'], name: string, options?: { unit?: string }): Created {
  const made: Created = { kind, name, unit: options?.unit, calls: [], callbacks: [] };
  created.set(name, made);
  return made;
}

const meter = {
  createCounter: (name: string, o?: { unit?: string }) => {
    const c = instrument('counter', name, o);
    return { add: (value: number, attributes?: Attributes) => c.calls.push({ value, attributes }) };
  },
  createHistogram: (name: string, o?: { unit?: string }) => {
    const c = instrument('histogram', name, o);
    return { record: (value: number, attributes?: Attributes) => c.calls.push({ value, attributes }) };
  },
  createObservableGauge: (name: string, o?: { unit?: string }) => {
    const c = instrument('gauge', name, o);
    return { addCallback: (cb: ObservableCallback) => c.callbacks.push(cb), removeCallback: () => {} };
  },
} as unknown as Meter;

const provider: MeterProvider = { getMeter: () => meter };

/** What a gauge's callbacks report now. */
function collect(name: string): { value: number; attributes: Attributes | undefined }[] {
  const out: { value: number; attributes: Attributes | undefined }[] = [];
  const result = { observe: (value: number, attributes?: Attributes) => out.push({ value, attributes }) };
  for (const cb of created.get(name)?.callbacks ?? []) void cb(result as ObservableResult);
  return out;
}

const sum = (name: string, attributes: Attributes) =>
  (created.get(name)?.calls ?? [])
    .filter((c) => JSON.stringify(c.attributes) === JSON.stringify(attributes))
    .reduce((s, c) => s + c.value, 0);

describe('createOtelMetrics (@opentelemetry/api)', () => {
  beforeAll(() => {
    expect(otel.setGlobalMeterProvider(provider)).toBe(true);
  });

  it('creates one instrument per metric, with OTel names and units', () => {
    createOtelMetrics({ meter: otel.getMeter('onceflow') });
    expect([...created.keys()].sort()).toEqual(METRICS.map((d) => `onceflow.${d.otel}`).sort());
    expect(created.get('onceflow.store.call.duration')).toMatchObject({ kind: 'histogram', unit: 's' });
    expect(created.get('onceflow.ledger.applies')).toMatchObject({ kind: 'counter', unit: '{apply}' });
    expect(created.get('onceflow.gateway.connections')).toMatchObject({ kind: 'gauge' });
  });

  it('records ledger outcomes, store call durations in seconds and gauges, with capped attributes', async () => {
    created.clear();
    const m = createOtelMetrics({ meter: otel.getMeter('onceflow'), prefix: 'app.', maxLabelValues: 1 });
    const ledger = createLedger({
      capacity: 4,
      name: 'payouts',
      store: m.observeStore(memoryStore()),
      observer: m.observer,
    });
    await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
    await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
    m.observer({ part: 'ledger', type: 'apply', ledger: 'refunds', outcome: 'applied', owner: 'p2' });
    expect(sum('app.ledger.applies', { ledger: 'payouts', outcome: 'duplicate' })).toBe(1);
    expect(sum('app.ledger.applies', { ledger: 'other', outcome: 'applied' })).toBe(1);
    const calls = created.get('app.store.call.duration')?.calls ?? [];
    expect(calls.length).toBe(2);
    expect(calls[0]?.attributes).toEqual({ store: 'memory', op: 'ledgerApply' });
    // Seconds: a memory store call is far under one.
    expect(calls.every((c) => c.value >= 0 && c.value < 1)).toBe(true);
    m.observer({
      part: 'gateway',
      type: 'state',
      connection: 7,
      state: 'open',
      continued: false,
      recovered: false,
    });
    m.observer({ part: 'adaptive-timeout', type: 'timeout', timeoutMs: 1500 });
    expect(collect('app.gateway.connections')).toEqual([{ value: 1, attributes: {} }]);
    expect(collect('app.reorder.gap_timeout')).toEqual([{ value: 1.5, attributes: {} }]);
  });

  it('refuses a missing meter and unknown options', () => {
    expect(() => createOtelMetrics({} as never)).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'meter' }),
    );
    expect(() => createOtelMetrics({ meter, prefx: 'x.' } as never)).toThrow(/did you mean `prefix`/);
    expect(() => createOtelMetrics({ meter, prefix: '9bad' })).toThrow(
      expect.objectContaining({ option: 'prefix' }),
    );
  });
});
