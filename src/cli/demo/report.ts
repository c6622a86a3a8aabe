import { redactUrl } from '../redact-url.js';
import { DELIVERIES_PER_SECOND } from './log.js';
import { isExact, type StrategyRow } from './measure.js';
import { SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from './onceflow.js';
import { CAPACITY_RULE } from './required-capacity.js';
import type { DemoResult } from './run.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const plural = (n: number, noun: string): string => `${fmt(n)} ${noun}${n === 1 ? '' : 's'}`;

/** Bytes as a person reads them: `980 B`, `12.3 kB`, `4.1 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const [value, unit] =
    bytes < 1e6 ? [bytes / 1e3, 'kB'] : bytes < 1e9 ? [bytes / 1e6, 'MB'] : [bytes / 1e9, 'GB'];
  return `${value.toFixed(1)} ${unit}`;
}

interface Column {
  readonly title: string;
  readonly left?: boolean;
  /** Columns with the highest number are dropped first when the table does not fit. */
  readonly drop: number;
  readonly cell: (row: StrategyRow) => string;
}

const COLUMNS: readonly Column[] = [
  { title: 'strategy', left: true, drop: 0, cell: (r) => r.strategy },
  { title: 'applied', drop: 5, cell: (r) => fmt(r.applied) },
  { title: 'blocked', drop: 4, cell: (r) => fmt(r.blocked) },
  { title: 'stale', drop: 0, cell: (r) => fmt(r.stale) },
  { title: 'lost', drop: 0, cell: (r) => fmt(r.moneyLost) },
  { title: 'doubled', drop: 0, cell: (r) => fmt(r.moneyDoubled) },
  { title: 'misbooked', drop: 0, cell: (r) => fmt(r.moneyMisbooked) },
  { title: 'rooms off', drop: 3, cell: (r) => fmt(r.roomsOff) },
  { title: 'memory', drop: 1, cell: (r) => (r.heldKeys === 0 ? '-' : formatBytes(r.heldBytes)) },
  { title: 'settl./s', drop: 6, cell: (r) => fmt(r.perSecond) },
];

/**
 * The rows as an aligned table no wider than `width`: the least needed columns are dropped
 * until it fits (`--json` has them all).
 *
 * Usage (internal to the CLI): `console.log(formatTable(result.rows, 100))`
 */
export function formatTable(rows: readonly StrategyRow[], width = WIDTH): string {
  let columns = [...COLUMNS];
  const cells = (c: Column): string[] => [c.title, ...rows.map(c.cell)];
  const widthOf = (cs: readonly Column[]): number =>
    cs.reduce((sum, c) => sum + Math.max(...cells(c).map((x) => x.length)), 2 * (cs.length - 1));
  while (widthOf(columns) > width) {
    const worst = Math.max(...columns.map((c) => c.drop));
    if (worst === 0) break;
    columns = columns.filter((c) => c.drop !== worst);
  }
  const widths = columns.map((c) => Math.max(...cells(c).map((x) => x.length)));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (columns[i]?.left ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const header = line(columns.map((c) => c.title));
  return [header, '-'.repeat(header.length), ...rows.map((r) => line(columns.map((c) => c.cell(r))))].join(
    '\n',
  );
}

// Text lines are wrapped to 100 columns, or the terminal's width when it is narrower.
const WIDTH = 100;

/** Greedy word wrap; continuation lines get `indent`. */
export function wrap(text: string, width = WIDTH, indent = '  '): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      lines.push(line);
      line = indent + word;
    } else line = line.length === 0 ? word : `${line} ${word}`;
  }
  if (line.length > 0) lines.push(line);
  return lines;
}

// The words a newcomer meets in the table and below it, one line each.
const WORDS: readonly [string, string][] = [
  ['window', 'the last C signatures (dedup keys) onceflow remembers per player; C is its capacity'],
  ['horizon', 'the newest order the window has forgotten: an older signature is answered stale'],
  ['stale', 'not applied and not doubled: a repeat from beyond the window, left to reconciliation'],
  ['overlap', "how many of a player's rounds can be open at once (--overlap); C is derived from it"],
  ['blocked', 'refused as a repeat (by the sequence guard: as "past")'],
  ['lost, doubled', 'money in minor units never applied, or applied more than once'],
  ['misbooked', "money booked under a room that is not the settlement's own"],
  ['rooms off', 'rooms whose total differs from the truth'],
  ['memory', 'dedup keys held after the run (SET NX EX: at its peak), at what Redis takes per key'],
];

/**
 * The whole human report: what was generated, the table, the words, why not a unique index, the
 * capacity the log required, and the verdict. `width`: the terminal's, when narrower than 100.
 *
 * Usage (internal to the CLI): `process.stdout.write(formatReport(await runDemo(DEFAULT_DEMO)))`
 */
export function formatReport(result: DemoResult, width = WIDTH): string {
  const { config: c, scenario: s, rows } = result;
  const w = Math.min(width, WIDTH);
  const out = [
    ...wrap(
      `onceflow demo: ${fmt(s.rounds * 2)} settlements (${plural(s.rounds, 'round')}) by ${plural(s.players, 'player')} ` +
        `in ${plural(s.rooms, 'room')}, seed ${c.seed}, overlap ${c.overlap}; onceflow rows on the ${result.store} store.`,
      w,
    ),
    ...wrap(
      `Delivered ${fmt(s.settlementDeliveries)} settlements to every strategy: ${fmt(s.duplicates)} duplicates, ` +
        `${fmt(s.replayed)} replayed by queue recovery, ${fmt(s.lateReplayed)} replayed 5-15 minutes late, ` +
        `${fmt(s.lateFinals)} finals after a move, ${fmt(s.reorders)} reorders; plus ${fmt(s.joins)} joins.`,
      w,
    ),
    '',
    formatTable(rows, w),
    '',
  ];
  const pad = Math.max(...WORDS.map(([word]) => word.length));
  for (const [word, meaning] of WORDS)
    out.push(...wrap(`${word.padEnd(pad)}  ${meaning}`, w, ' '.repeat(pad + 2)));
  out.push('', ...whyNotAUniqueIndex(result).flatMap((p) => wrap(p, w)), '');
  out.push(...capacityLines(result).flatMap((p) => wrap(p, w)), '', verdict(result));
  return `${out.join('\n')}\n`;
}

const row = (result: DemoResult, id: string): StrategyRow | undefined => result.rows.find((r) => r.id === id);

function whyNotAUniqueIndex(result: DemoResult): string[] {
  const c4 = row(result, `onceflow-c${SETTLEMENT_CAPACITY}`);
  const unique = row(result, 'unique-index');
  const short = row(result, `set-nx-ex-${result.config.ttl}`);
  const long = row(result, 'set-nx-ex-covering');
  const c3 = row(result, `onceflow-c${TOO_SMALL_CAPACITY}`);
  const c3n = row(result, `onceflow-c${TOO_SMALL_CAPACITY}-no-order`);
  const out: string[] = [];
  if (c4 && unique) {
    out.push(
      `Why not a unique index? It is exact too, but it holds a key for every settlement ever seen: ` +
        `${formatBytes(unique.heldBytes)} after this run, growing with every event for as long as the table lives. ` +
        `onceflow's window holds ${SETTLEMENT_CAPACITY} signatures per player (${formatBytes(c4.heldBytes)} here: ` +
        `bounded by players, not by events), is exact within the delivery bound its capacity is derived from, and ` +
        `beyond it answers \`stale\` (${fmt(c4.stale)} times here) instead of applying money twice.`,
    );
  }
  if (short && long) {
    const ttl = result.config.ttl;
    out.push(
      (short.doubledCount === 0
        ? `SET NX EX forgets by time: at ${ttl} s no repeat of this log came later. `
        : `SET NX EX forgets by time: at ${ttl} s the ${fmt(short.doubledCount)} repeats that came later ` +
          `were applied again (${fmt(short.moneyDoubled)} doubled). `) +
        `${result.coveringTtl} s is the TTL this log needed; it held ${formatBytes(long.heldBytes)} at its peak ` +
        `(${plural(long.heldKeys, 'key')}: at most TTL x rate, at this log's simulated ${fmt(DELIVERIES_PER_SECOND)} ` +
        'deliveries/s, so a faster consumer holds more), and a replay later than that still doubles.',
    );
  }
  if (c3 && c3n) {
    out.push(
      `C=${TOO_SMALL_CAPACITY} is one too small: without orders ${fmt(c3n.doubledCount)} repeats the window had ` +
        `forgotten were applied again (${fmt(c3n.moneyDoubled)} doubled); with orders the horizon answered ` +
        `\`stale\` ${fmt(c3.stale)} times instead (${fmt(c3.staleOnlyLost)} settlements only ever stale count as lost).`,
    );
  }
  out.push(
    'The sequence guard, per-type flags and no dedup book under the room the player sits in now, so a final ' +
      'that arrives after a move is misbooked; the guard drops rounds of a room whose counter is lower, the flags ' +
      'remember one round, and no dedup applies every repeat.',
  );
  return out;
}

function capacityLines(result: DemoResult): string[] {
  const { requiredCapacity: need, worst, config } = result;
  const out = [
    `Capacity this log required (late replays aside): ${need.capacity}` +
      (worst
        ? ` (${worst.owner}: ${need.others} distinct other signatures were first seen between the first and ` +
          `the last delivery of ${worst.signature}).`
        : ' (nothing was delivered twice).'),
    `Rule (DESIGN §3.2): ${CAPACITY_RULE}. If (a) each round's final is first delivered before the next ` +
      "round's instant and (b) every repeat of a round arrives before the round after next begins, that count " +
      `is at most 3: C = ${SETTLEMENT_CAPACITY} = 2 settlements x 2 rounds. With (a) relaxed (--overlap 2) C must be 5.`,
  ];
  if (need.capacity > SETTLEMENT_CAPACITY) {
    out.push(
      `It needed ${need.capacity} > ${SETTLEMENT_CAPACITY}${config.overlap === 2 ? ' because --overlap 2 relaxes (a)' : ''}: ` +
        `the C=${SETTLEMENT_CAPACITY} window ran outside its derivation, and its horizon answered \`stale\` where a ` +
        'window without orders would have doubled.',
    );
  }
  return out;
}

const lossSummary = (r: StrategyRow): string =>
  `${fmt(r.moneyLost)} lost, ${fmt(r.moneyDoubled)} doubled, ${fmt(r.moneyMisbooked)} misbooked, ${fmt(r.roomsOff)} rooms off`;

function verdict(result: DemoResult): string {
  const ref = row(result, result.referenceId);
  if (ref === undefined) return 'No onceflow reference row was run.';
  return result.ok && isExact(ref)
    ? `OK: ${ref.strategy} applied every settlement exactly once, under its own room.`
    : `FAILED: ${ref.strategy}: ${lossSummary(ref)}.`;
}

/**
 * The `--json` view: one object with the config, the required capacity (a number) and the rows.
 *
 * Usage (internal to the CLI): `process.stdout.write(`${JSON.stringify(toJson(result))}\n`)`
 */
export function toJson(result: DemoResult): Record<string, unknown> {
  return {
    // The URL may carry a password: --json output ends up in CI logs too.
    config:
      result.config.store === undefined
        ? result.config
        : { ...result.config, store: redactUrl(result.config.store) },
    store: result.store,
    requiredCapacity: result.requiredCapacity.capacity,
    rule: CAPACITY_RULE,
    worst: result.worst === null ? null : { ...result.worst, others: result.requiredCapacity.others },
    scenario: result.scenario,
    coveringTtl: result.coveringTtl,
    rows: result.rows,
    reference: result.referenceId,
    ok: result.ok,
  };
}
