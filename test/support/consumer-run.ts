// A stream consumer running in a test: started with an abort signal of its own and its events
// collected, stopped (and waited for) by `stop()`.
import {
  createStreamConsumer,
  type StreamConsumer,
  type StreamConsumerEvent,
  type StreamConsumerOptions,
} from '../../src/streams/consumer.js';

export interface RunningConsumer {
  readonly consumer: StreamConsumer;
  /** Every event the consumer reported, in order. */
  readonly events: StreamConsumerEvent[];
  /** The consumer's run, settled once it stopped. */
  readonly done: Promise<void>;
  /** Aborts the run and waits for it to end. */
  stop(): Promise<void>;
}

/** Starts `options` (without `signal` and `observer`: the run's own) and collects its events. */
export function startConsumer<E>(
  options: Omit<StreamConsumerOptions<E>, 'signal' | 'observer'>,
): RunningConsumer {
  const controller = new AbortController();
  const events: StreamConsumerEvent[] = [];
  const consumer = createStreamConsumer<E>({
    ...options,
    signal: controller.signal,
    observer: (e) => events.push(e),
  } as StreamConsumerOptions<E>);
  const done = consumer.run();
  return {
    consumer,
    events,
    done,
    stop: () => {
      controller.abort();
      return done;
    },
  };
}
