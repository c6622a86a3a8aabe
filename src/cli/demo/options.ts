import { closest } from '../../core/validate.js';
import { InvalidOptionError } from '../../index.js';
import { redactUrl } from '../redact-url.js';
import { type GatewayDemoConfig, NODES } from './gateway-plan.js';
import { DEFAULT_SCENARIO } from './log.js';
import { SETTLEMENT_CAPACITY } from './onceflow.js';
import type { DemoConfig } from './run.js';

/** The option table of `onceflow demo`, in the shape `node:util` `parseArgs` takes. */
export const DEMO_OPTIONS = {
  settlements: { type: 'string' },
  players: { type: 'string' },
  seed: { type: 'string' },
  'dup-rate': { type: 'string' },
  'late-rate': { type: 'string' },
  'replay-rate': { type: 'string' },
  'late-replay-rate': { type: 'string' },
  'reorder-rate': { type: 'string' },
  'move-rate': { type: 'string' },
  overlap: { type: 'string' },
  ttl: { type: 'string' },
  store: { type: 'string' },
  gateway: { type: 'boolean' },
  clients: { type: 'string' },
  messages: { type: 'string' },
  serve: { type: 'boolean' },
  port: { type: 'string' },
  linger: { type: 'string' },
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
  readonly config: DemoConfig;
  /** Print one JSON object on stdout instead of the report. */
  readonly json: boolean;
  /** Show the progress bar (still only when stderr is a terminal). */
  readonly progress: boolean;
  /** With `--serve`: the status page's port, and how long it stays up after the run (ms). */
  readonly serve?: DemoServe;
}

/** `onceflow demo --serve`: where the status page listens and how long it outlives the run. */
export interface DemoServe {
  readonly port: number;
  readonly lingerMs: number;
}

/** How to run `onceflow demo --gateway`, from the command line. */
export interface GatewayDemoCommand {
  readonly config: GatewayDemoConfig;
  readonly json: boolean;
  readonly progress: boolean;
}

/** The defaults of `onceflow demo --gateway`: a run of 10-20 s. */
export const DEFAULT_GATEWAY_DEMO: Readonly<GatewayDemoConfig> = Object.freeze({
  clients: 50,
  messages: 100,
  seed: DEFAULT_SCENARIO.seed,
});
// Each client holds two sockets in the demo's process (its own and the node's end), and a run
// sends clients x messages each way within the same 5 s workload: 1000 x 1000 (a million each way)
// is far past a run of seconds, and 2,000 sockets fit a default limit of open files once Node
// raised it to the hard limit.
const MAX_CLIENTS = 1000;
const MAX_MESSAGES = 1000;
// The settlement demo's own options, which mean nothing to --gateway, and the other way round.
const SETTLEMENT_ONLY = [
  'settlements',
  'players',
  'dup-rate',
  'late-rate',
  'replay-rate',
  'late-replay-rate',
  'reorder-rate',
  'move-rate',
  'overlap',
  'ttl',
] as const;
const GATEWAY_ONLY = ['clients', 'messages'] as const;
const SERVE_ONLY = ['port', 'linger'] as const;
// An hour: a page left up longer is a server, which `onceflow serve` is for.
const MAX_LINGER_SECONDS = 3600;
/** How long `demo --serve` keeps the page up after the run by default, in seconds. */
export const DEFAULT_LINGER_SECONDS = 60;

/** The defaults of `onceflow demo`: a run of a few seconds that shows every failure mode. */
export const DEFAULT_DEMO: Readonly<DemoConfig> = Object.freeze({ ...DEFAULT_SCENARIO, ttl: 60 });

// The log is plain objects, about 460 bytes of heap per settlement with its deliveries; the rows'
// answers and the memory store's state take as much again at their peak (1.2 GB of heap measured
// for a million settlements, a run of about a minute): a million stays inside a default Node heap.
const MAX_SETTLEMENTS = 1_000_000;
const MAX_PLAYERS = 1_000_000;
// A day: a TTL beyond it is no longer the "forgets by time" defence the row stands for.
const MAX_TTL_SECONDS = 86_400;

const d = DEFAULT_DEMO;
/** The help text of `onceflow demo`. */
export const DEMO_HELP = `Usage: onceflow demo [options]

Generates a seeded log of game settlements as an at-least-once transport delivers them
(duplicates, cross-room late finals, queue-recovery replays, late replays, reordering), runs the
same log through onceflow's ledger, the defences users write (a unique index, SET NX EX) and naive
guards, and compares each with the truth.

Options:
  --store URL          where the onceflow rows run: memory (default), redis://host:port[/db]
                       (in a key prefix of the run's own) or postgres://user@host:port/db (in a
                       schema of its own); removed at the end (needs ioredis or pg installed)
  --settlements N      unique settlements, two per round: an odd N is rounded up (default ${d.settlements})
  --players N          players sharing the rounds (default ${d.players})
  --seed N             seed of the generator, 0..4294967295 (default ${d.seed})
  --dup-rate R         per settlement: delivered again later in its block or the next (default ${d.dupRate})
  --late-rate R        per round: the player moves and the final arrives after the join (default ${d.lateRate})
  --replay-rate R      per round: queue recovery re-delivers rounds r-1 and r (default ${d.replayRate})
  --late-replay-rate R per round: re-delivered once more 5 to 15 minutes later (default ${d.lateReplayRate})
  --reorder-rate R     per round: instant/final or adjacent settlements swapped (default ${d.reorderRate})
  --move-rate R        per round: the player moves to another room (default ${d.moveRate})
  --overlap 1|2        2 lets a late final land after the next round's instant (default ${d.overlap})
  --ttl SECONDS        the TTL of the short SET NX EX row, 1..${MAX_TTL_SECONDS} (default ${d.ttl})
  --gateway            the WebSocket gateway demo instead: real clients through ${NODES} nodes on loopback
                       with moves between nodes and node kills, onceflow's gateway (on --store:
                       memory or redis://) next to a naive one (per-node windows, no resume); prints
                       delivered once / lost / doubled / out of order per direction
  --clients N          with --gateway: clients, 1..${MAX_CLIENTS} (default ${DEFAULT_GATEWAY_DEMO.clients})
  --messages N         with --gateway: messages each client sends and is sent, 1..${MAX_MESSAGES} (default ${DEFAULT_GATEWAY_DEMO.messages})
  --serve              keep a live status page up while the run goes (http://127.0.0.1:PORT/, printed
                       on stderr; /metrics and /healthz too): the log is first played over about 20 s,
                       doubles per guard climbing (onceflow's row flat at zero), then the run itself
                       reports; the page stays up --linger seconds after, or until Ctrl-C (needs prom-client)
  --port N             with --serve: the page's port, 0..65535 (default 8080; 0 picks a free one)
  --linger SECONDS     with --serve: how long the page stays up after the report, 0..${MAX_LINGER_SECONDS} (default ${DEFAULT_LINGER_SECONDS})
  --json               print one JSON object (config, requiredCapacity, rows) and nothing else
  --no-progress        no progress bar (it is also off when stderr is not a terminal)
  -h, --help           this help

Exit codes: 0 the onceflow C=${SETTLEMENT_CAPACITY} row is exact (with --gateway: onceflow's rows lost, doubled and
reordered nothing); 1 it lost, doubled or misbooked money (or the demo failed); 2 invalid options;
130 / 143 interrupted by SIGINT (Ctrl-C) / SIGTERM, after removing the run's keys or schema.

Runs with worker processes killed mid-run: examples/settlement-workers.mjs.
`;

// Options of the demo's earlier shapes, and where what they did went.
const MOVED: Readonly<Record<string, string>> = {
  redis: 'use --store redis://host:port',
  postgres: 'use --store postgres://user@host:port/db',
  workers: 'worker processes run in examples/settlement-workers.mjs',
  streams: 'worker processes run in examples/settlement-workers.mjs',
};

/**
 * Refuses a `--name` that is not an option of the demo, naming the closest one (`--seeed`: did you
 * mean `--seed`?), or where an option of an earlier shape went. `node:util` would refuse it too,
 * without the suggestion.
 */
export function refuseUnknown(args: readonly string[]): void {
  const known = Object.keys(DEMO_OPTIONS);
  for (const arg of args) {
    if (arg === '--') return;
    if (!arg.startsWith('--')) continue;
    const name = arg.slice(2).split('=')[0] as string;
    if (known.includes(name)) continue;
    const near = MOVED[name] ?? closest(name, known);
    const hint =
      near === undefined
        ? 'run `onceflow demo --help` for the options'
        : near.startsWith('use') || near.startsWith('worker')
          ? near
          : `did you mean --${near}?`;
    throw new InvalidOptionError(`--${name}`, `a known option (${hint})`, arg);
  }
}

/**
 * Validates parsed `onceflow demo` options into a run. Throws an `ERR_INVALID_OPTION` naming the
 * option (as typed, e.g. `--dup-rate`), what was expected and the value that was given.
 *
 * Usage (internal to the CLI): `demoCommandFrom({ overlap: '3' })` throws
 * Expected `--overlap` to be 1 or 2, got `"3"` (string).
 */
export function demoCommandFrom(values: DemoArgValues): DemoCommand {
  refuseAlong(values, GATEWAY_ONLY, 'given with --gateway only (an option of the gateway demo)');
  if (values.serve !== true) refuseAlong(values, SERVE_ONLY, 'given with --serve only');
  const config: DemoConfig = {
    // Two per round: an odd count is rounded up, so the config reported is the run's.
    settlements: roundUpToEven(int('settlements', values.settlements, d.settlements, 2, MAX_SETTLEMENTS)),
    players: int('players', values.players, d.players, 1, MAX_PLAYERS),
    seed: int('seed', values.seed, d.seed, 0, 0xffff_ffff),
    dupRate: rate('dup-rate', values['dup-rate'], d.dupRate),
    lateRate: rate('late-rate', values['late-rate'], d.lateRate),
    replayRate: rate('replay-rate', values['replay-rate'], d.replayRate),
    lateReplayRate: rate('late-replay-rate', values['late-replay-rate'], d.lateReplayRate),
    reorderRate: rate('reorder-rate', values['reorder-rate'], d.reorderRate),
    moveRate: rate('move-rate', values['move-rate'], d.moveRate),
    overlap: overlap(values.overlap, d.overlap),
    ttl: int('ttl', values.ttl, d.ttl, 1, MAX_TTL_SECONDS),
    ...storeOf(values.store),
  };
  const json = values.json ?? false;
  const progress = !json && !(values['no-progress'] ?? false);
  if (values.serve !== true) return { config, json, progress };
  const serve: DemoServe = {
    port: int('port', values.port, 8080, 0, 65_535),
    lingerMs: int('linger', values.linger, DEFAULT_LINGER_SECONDS, 0, MAX_LINGER_SECONDS) * 1000,
  };
  return { config, json, progress, serve };
}

/**
 * Validates parsed `onceflow demo --gateway` options into a run, as {@link demoCommandFrom} does
 * for the settlement demo; the settlement demo's own options are refused here.
 *
 * Usage (internal to the CLI): `gatewayCommandFrom({ gateway: true, clients: '20' }).config.clients // 20`
 */
export function gatewayCommandFrom(values: DemoArgValues): GatewayDemoCommand {
  refuseAlong(values, SETTLEMENT_ONLY, 'left out with --gateway (an option of the settlement demo)');
  refuseAlong(
    values,
    ['serve', ...SERVE_ONLY],
    'left out with --gateway (the status page runs with the settlement demo)',
  );
  const g = DEFAULT_GATEWAY_DEMO;
  const store = storeOf(values.store);
  if (store.store !== undefined && !isRedisUrl(store.store))
    throw new InvalidOptionError(
      '--store',
      'memory or a Redis URL like redis://127.0.0.1:6379 with --gateway (the gateway keeps its sessions and streams there)',
      redactUrl(store.store),
    );
  const config: GatewayDemoConfig = {
    clients: int('clients', values.clients, g.clients, 1, MAX_CLIENTS),
    messages: int('messages', values.messages, g.messages, 1, MAX_MESSAGES),
    seed: int('seed', values.seed, g.seed, 0, 0xffff_ffff),
    ...store,
  };
  const json = values.json ?? false;
  return { config, json, progress: !json && !(values['no-progress'] ?? false) };
}

function refuseAlong(values: DemoArgValues, names: readonly (keyof DemoArgValues)[], why: string): void {
  for (const name of names) {
    const given = values[name];
    if (given !== undefined) throw new InvalidOptionError(`--${name}`, why, given);
  }
}

function storeOf(url: string | undefined): { store?: string } {
  if (url === undefined || url === 'memory' || url === 'memory:') return {};
  if (isRedisUrl(url) || isPostgresUrl(url)) return { store: url };
  throw new InvalidOptionError(
    '--store',
    'memory, a Redis URL like redis://127.0.0.1:6379 (rediss:// for TLS, port 1-65535, database a number) or a PostgreSQL URL like postgres://user@127.0.0.1:5432/db',
    // Echoed so the typo shows, with its password (if any) replaced: errors end up in CI logs.
    redactUrl(url),
  );
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
