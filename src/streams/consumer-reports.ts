// What a consumer reports beyond single entries: its delivered and acked counts, batched, and its
// group's backlog (the `lag` event), read in one script call beside the read loop, never in its way.
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import type { ResolvedOptions, StreamConsumerEvent } from './consumer-options.js';

/**
 * Deliveries and acks as counts since the last call: one event each per read, claim page or
 * settled batch (the consumer calls it once after each), not one per entry.
 */
export function countReporter(
  stats: { readonly delivered: number; readonly acked: number },
  emit: (event: StreamConsumerEvent) => void,
): () => void {
  let delivered = 0;
  let acked = 0;
  return () => {
    if (stats.delivered > delivered)
      emit({ part: 'stream-consumer', type: 'delivered', count: stats.delivered - delivered });
    if (stats.acked > acked) emit({ part: 'stream-consumer', type: 'acked', count: stats.acked - acked });
    delivered = stats.delivered;
    acked = stats.acked;
  };
}

/**
 * Reads the group's pending count and lag every `statsInterval` until the signal aborts, one call
 * at a time (a slow Redis delays the next report, never stacks them); a failure is an `error`
 * event of operation `stats`. Nothing is reported while the stream or the group is missing (the
 * read loop recreates the group).
 */
export async function statsLoop<E>(
  o: ResolvedOptions<E>,
  emit: (event: StreamConsumerEvent) => void,
  sleep: (ms: number) => Promise<void>,
): Promise<void> {
  if (o.statsIntervalMs === 0) return;
  for (;;) {
    await sleep(o.statsIntervalMs);
    if (o.signal.aborted) return;
    let reply: unknown;
    try {
      reply = await evalScript(o.client, scripts.streamGroupStats, [o.stream], [o.group]);
    } catch (error) {
      if (!o.signal.aborted) emit({ part: 'stream-consumer', type: 'error', operation: 'stats', error });
      continue;
    }
    if (!Array.isArray(reply)) continue;
    const [pending, lag] = reply as [unknown, unknown];
    emit({
      part: 'stream-consumer',
      type: 'lag',
      pending: Number(pending),
      lag: lag === null || lag === undefined ? undefined : Number(lag),
    });
  }
}
