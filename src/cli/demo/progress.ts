import cliProgress from 'cli-progress';
import type { DemoProgress } from './run.js';

/** A progress sink for {@link DemoProgress} events, and how to close it. */
export interface ProgressBar {
  readonly update: (progress: DemoProgress) => void;
  readonly stop: () => void;
}

/**
 * A progress bar on `stream` (stderr), one phase at a time, or a no-op when `enabled` is false or
 * the stream is not a terminal (so piped or captured output never carries control codes).
 *
 * Usage (internal to the CLI):
 *
 *     const bar = progressBar(process.stderr, true);
 *     await runDemo(config, bar.update);
 *     bar.stop();
 */
export function progressBar(stream: NodeJS.WriteStream, enabled: boolean): ProgressBar {
  if (!enabled || stream.isTTY !== true) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: '{bar} {percentage}% | {phase} | {value}/{total}',
      hideCursor: true,
      clearOnComplete: true,
      // A Ctrl-C mid-run restores the cursor.
      gracefulExit: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let phase: string | undefined;
  return {
    update({ phase: next, done, total }) {
      if (phase === undefined) bar.start(total, done, { phase: next });
      else if (next !== phase) {
        bar.setTotal(total);
        bar.update(done, { phase: next });
      } else bar.update(done);
      phase = next;
    },
    stop() {
      if (phase !== undefined) bar.stop();
    },
  };
}
