import { InvalidOptionError } from '../index.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import { DEFAULT_SCENARIO, type ScenarioConfig } from './scenario.js';
import type { SharedDemoOptions } from './shared-strategy.js';

/** The option table of `onceflow demo`, in the shape `node:util` `parseArgs` takes. */
export const DEMO_OPTIONS = {
  settlements: { type: 'string' },
  players: { type: 'string' },
  seed: { type: 'string' },
  'dup-rate': { type: 'string' },
  'late-rate': { type: 'string' },
  'replay-rate': { type: 'string' },
  'reorder-rate': { type: 'string' },
  'move-rate': { type: 'string' },
  overlap: { type: 'string' },
  redis: { type: 'string' },
  postgres: { type: 'string' },
  workers: { type: 'string' },
  streams: { type: 'boolean' },
  json: { type: 'boolean' },
  'no-progress': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What `parseArgs` gives for {@link DEMO_OPTIONS}. */
export type DemoArgValues = {
  [K in keyof typeof DEMO_OPTIONS]?: (typeof DEMO_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

/** How to run the demo, from the command line. */
export interface DemoCommand {
  readonly config: ScenarioConfig;
  /** Print one JSON object on stdout instead of the table. */
  readonly json: boolean;
  /** Show the progress bar (still only when stderr is a terminal). */
  readonly progress: boolean;
  /**
   * Run the onceflow row on a shared store with worker processes (`--redis URL` or
   * `--postgres URL`, with `--workers N`).
   */
  readonly shared?: SharedDemoOptions;
  /**
   * With `--redis`: the settlement deliveries go through a Redis stream to `--workers` consumer
   * processes, some killed mid-run (`--streams`), instead of the partitioned workers.
   */
  readonly streams?: boolean;
}

// A million settlements is the documented big run; five is the most whose columns
// (about 60 bytes per settlement with the log) stay well inside a default Node heap.
const MAX_SETTLEMENTS = 5_000_000;
const MAX_PLAYERS = 1_000_000;

/** The help text of `onceflow demo`. */
export const DEMO_HELP = `Usage: onceflow demo [options]

Generates a seeded log of game settlements as an at-least-once transport delivers them
(duplicates, cross-room late finals, queue-recovery replays, reordering), runs the same log
through onceflow's ledger and through naive dedup strategies, and compares each with the truth.

Options:
  --settlements N     unique settlements, two per round: an odd N is rounded up (default ${DEFAULT_SCENARIO.settlements})
  --players N         players sharing the rounds (default ${DEFAULT_SCENARIO.players})
  --seed N            seed of the generator, 0..4294967295 (default ${DEFAULT_SCENARIO.seed})
  --dup-rate R        per settlement: delivered again later in its block or the next (default ${DEFAULT_SCENARIO.dupRate})
  --late-rate R       per round: the player moves and the final arrives after the join (default ${DEFAULT_SCENARIO.lateRate})
  --replay-rate R     per round: queue recovery re-delivers rounds r-1 and r (default ${DEFAULT_SCENARIO.replayRate})
  --reorder-rate R    per round: instant/final or adjacent settlements swapped; a round whose final
                      comes late has its instant alone in its block: nothing to swap (default ${DEFAULT_SCENARIO.reorderRate})
  --move-rate R       per round: the player moves to another room (default ${DEFAULT_SCENARIO.moveRate})
  --overlap 1|2       2 lets a late final land after the next round's instant (default ${DEFAULT_SCENARIO.overlap})
  --redis URL         also run onceflow on a shared Redis (redis://host:port[/db]) with worker
                      processes; that row then decides the exit code (needs ioredis installed)
  --postgres URL      also run onceflow on a shared PostgreSQL (postgres://user@host:port/db) with
                      worker processes, in a schema of the run's own, dropped at the end; that row
                      then decides the exit code (needs pg installed)
  --streams           with --redis: deliver the settlements through a Redis stream to --workers
                      consumer processes, 3 of them SIGKILLed mid-run and replaced; rows for
                      onceflow's consumer (which then decides the exit code) and a naive one
  --workers N         worker processes for --redis or --postgres, 1..64 (default 4)
  --json              print one JSON object (config, requiredCapacity, rows) and nothing else
  --no-progress       no progress bar (it is also off when stderr is not a terminal)
  -h, --help          this help

Exit codes: 0 the onceflow capacity-${SETTLEMENT_CAPACITY} row is exact; 1 it lost, doubled or misbooked money
(or the demo failed); 2 invalid options; 130 / 143 interrupted by SIGINT (Ctrl-C) / SIGTERM,
after stopping the workers and removing the run's keys or schema.
`;

/**
 * Validates parsed `onceflow demo` options into a run. Throws an `ERR_INVALID_OPTION` naming the
 * option (as typed, e.g. `--dup-rate`), what was expected and the value that was given.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     demoCommandFrom({ settlements: '20000', json: true }).config.settlements; // 20000
 *     demoCommandFrom({ overlap: '3' }); // throws: Expected `--overlap` to be 1 or 2, got `"3"` (string)
 */
export function demoCommandFrom(values: DemoArgValues): DemoCommand {
  const d = DEFAULT_SCENARIO;
  const config: ScenarioConfig = {
    // Two per round: an odd count is rounded up, so the config reported is the run's.
    settlements: roundUpToEven(int('settlements', values.settlements, d.settlements, 2, MAX_SETTLEMENTS)),
    players: int('players', values.players, d.players, 1, MAX_PLAYERS),
    seed: int('seed', values.seed, d.seed, 0, 0xffff_ffff),
    dupRate: rate('dup-rate', values['dup-rate'], d.dupRate),
    lateRate: rate('late-rate', values['late-rate'], d.lateRate),
    replayRate: rate('replay-rate', values['replay-rate'], d.replayRate),
    reorderRate: rate('reorder-rate', values['reorder-rate'], d.reorderRate),
    moveRate: rate('move-rate', values['move-rate'], d.moveRate),
    overlap: overlap(values.overlap, d.overlap),
  };
  const json = values.json ?? false;
  const command: DemoCommand = { config, json, progress: !json && !(values['no-progress'] ?? false) };
  if (values.redis !== undefined && values.postgres !== undefined) {
    throw new InvalidOptionError(
      '--postgres',
      'given without `--redis` (one shared store per run)',
      '--redis',
    );
  }
  if (values.workers !== undefined && values.redis === undefined && values.postgres === undefined) {
    throw new InvalidOptionError('--workers', 'used together with `--redis` or `--postgres`', values.workers);
  }
  if (values.streams && values.redis === undefined) {
    throw new InvalidOptionError('--streams', 'used together with `--redis`', true);
  }
  // 64 processes is far more than 2-8 cores can run usefully; beyond it is a typo.
  const workers = () => int('workers', values.workers, 4, 1, 64);
  if (values.postgres !== undefined) {
    if (!isPostgresUrl(values.postgres)) {
      throw new InvalidOptionError(
        '--postgres',
        'a PostgreSQL URL like postgres://user@127.0.0.1:5432/db (postgres:// or postgresql://, port 1-65535)',
        redactUrl(values.postgres),
      );
    }
    return { ...command, shared: { backend: 'postgres', url: values.postgres, workers: workers() } };
  }
  if (values.redis === undefined) return command;
  if (!isRedisUrl(values.redis)) {
    throw new InvalidOptionError(
      '--redis',
      'a Redis URL like redis://127.0.0.1:6379 or rediss://host:6380/2 (port 1-65535, database a number)',
      // Echoed so the typo shows, with its password (if any) replaced: errors end up in CI logs.
      redactUrl(values.redis),
    );
  }
  const shared: SharedDemoOptions = { backend: 'redis', url: values.redis, workers: workers() };
  return values.streams ? { ...command, shared, streams: true } : { ...command, shared };
}

/** A URL pg reads as its author meant: postgres:// or postgresql://, a port (if any) that exists. */
function isPostgresUrl(text: string): boolean {
  const url = parsedUrl(text);
  return url !== undefined && (url.protocol === 'postgres:' || url.protocol === 'postgresql:');
}

/**
 * A URL ioredis reads as its author meant: redis:// or rediss://, a port (if any) that
 * exists, a database (if any) that is a number, user info that decodes (options in the query, as
 * ioredis reads them, are left to it). Checked here because
 * ioredis throws a bare TypeError for the rest (`/abc` even becomes database NaN, refused only
 * after the workers have started).
 */
function isRedisUrl(text: string): boolean {
  const url = parsedUrl(text);
  // No host (redis:///0) is ioredis's localhost.
  return (
    url !== undefined &&
    (url.protocol === 'redis:' || url.protocol === 'rediss:') &&
    /^(\/\d*)?$/.test(url.pathname)
  );
}

/** `text` as a URL whose user info decodes, whose port (if any) exists and that has no fragment. */
function parsedUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    return undefined;
  }
  return (url.port === '' || Number(url.port) >= 1) && url.hash === '' ? url : undefined;
}

function int(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  // Digits with single `_` separators between them (1_000_000), or a plain exponent (1e6).
  const ok = /^\d+(_\d+)*$/.test(text) || /^\d+(\.\d+)?e\d+$/i.test(text);
  const value = ok ? Number(text.replaceAll('_', '')) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidOptionError(`--${name}`, `a whole number from ${min} to ${max}`, text);
  }
  return value;
}

const roundUpToEven = (n: number): number => n + (n % 2);

function rate(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  // A decimal (0.05, .05) or one in exponent form (5e-2, 1e-3), as the whole-number options take 1e6.
  const value = /^(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 0 && value <= 1)) {
    throw new InvalidOptionError(`--${name}`, 'a probability from 0 to 1 (like 0.05)', text);
  }
  return value;
}

function overlap(text: string | undefined, fallback: 1 | 2): 1 | 2 {
  if (text === undefined) return fallback;
  if (text === '1' || text === '2') return Number(text) as 1 | 2;
  throw new InvalidOptionError('--overlap', '1 or 2', text);
}
