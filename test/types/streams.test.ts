// The public types of onceflow/streams. Checked twice, as results.test.ts explains: by
// `npm run typecheck` (every `expectTypeOf` must hold and every `@ts-expect-error` line must be an
// error) and by vitest, which runs the cases against real values.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  createStreamProducer,
  type Delivery,
  type StreamProducer,
  type WindowEntry,
} from '../../src/streams/index.js';
import { decodeEntry } from '../../src/streams/windows.js';

interface Payment {
  id: string;
  cents: number;
}

// A client that is never called: making a producer sends nothing.
const client = { call: async () => null };

describe('onceflow/streams types', () => {
  it('createStreamProducer<T> types `id` and `publish` by the event type', () => {
    const producer = createStreamProducer<Payment>({ client, stream: 'types:payments', id: (p) => p.id });
    expectTypeOf(producer).toEqualTypeOf<StreamProducer<Payment>>();
    expectTypeOf(producer.publish).parameter(0).toEqualTypeOf<Payment>();
    // @ts-expect-error an event of another type is refused at compile time
    void (() => producer.publish({ cents: 1 }));
    // @ts-expect-error `id` sees the event type, not unknown
    createStreamProducer<Payment>({ client, stream: 'types:payments', id: (p) => p.missing });
    // Without a type argument, events are unknown (any JSON value).
    expectTypeOf(createStreamProducer({ client, stream: 's' }).publish)
      .parameter(0)
      .toBeUnknown();
    expect(typeof producer.publish).toBe('function');
  });

  it('a delivery carries its order as a bigint', () => {
    expectTypeOf<Delivery<Payment>['order']>().toEqualTypeOf<bigint>();
    expectTypeOf<Delivery<Payment>['event']>().toEqualTypeOf<Payment>();
  });

  it('a window entry narrows on `decoded`: event only when decoded, problem and error otherwise', () => {
    const entries: WindowEntry[] = [decodeEntry('1-0', ['e', '{"n":1}']), decodeEntry('2-0', ['x', 'y'])];
    const seen = entries.map((e) => {
      // @ts-expect-error `event` is not there before narrowing
      void e.event;
      if (e.decoded) {
        expectTypeOf(e.event).toBeUnknown();
        return e.event;
      }
      expectTypeOf(e.problem).toEqualTypeOf<'no-event' | 'undecodable'>();
      expectTypeOf(e.error).toEqualTypeOf<Error>();
      return e.problem;
    });
    expect(seen).toEqual([{ n: 1 }, 'no-event']);
  });
});
