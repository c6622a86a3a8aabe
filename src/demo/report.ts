import { isExact, type StrategyRow } from './measure.js';
import { SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from './onceflow-strategy.js';
import { CAPACITY_RULE } from './required-capacity.js';
import type { DemoResult } from './run-demo.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
/** `1 round`, `2 rounds`. */
const plural = (n: number, noun: string): string => `${fmt(n)} ${noun}${n === 1 ? '' : 's'}`;

interface Column {
  readonly title: string;
  readonly left?: boolean;
  readonly cell: (row: StrategyRow) => string;
}

const COLUMNS: readonly Column[] = [
  { title: 'strategy', left: true, cell: (r) => r.strategy },
  { title: 'applied', cell: (r) => fmt(r.applied) },
  { title: 'blocked', cell: (r) => fmt(r.blocked) },
  { title: 'stale', cell: (r) => fmt(r.stale) },
  { title: 'money lost', cell: (r) => fmt(r.moneyLost) },
  { title: 'doubled', cell: (r) => fmt(r.moneyDoubled) },
  { title: 'misbooked', cell: (r) => fmt(r.moneyMisbooked) },
  { title: 'wrong room', cell: (r) => fmt(r.misbookedCount) },
  { title: 'rooms off', cell: (r) => fmt(r.roomsOff) },
  { title: 'settl./s', cell: (r) => fmt(r.perSecond) },
];

/**
 * The rows as an aligned text table (one header line, a rule, one line per strategy).
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     console.log(formatTable(result.rows));
 */
export function formatTable(rows: readonly StrategyRow[]): string {
  const cells = rows.map((row) => COLUMNS.map((c) => c.cell(row)));
  const widths = COLUMNS.map((c, i) =>
    Math.max(c.title.length, ...cells.map((line) => (line[i] as string).length)),
  );
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (COLUMNS[i]?.left ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const header = line(COLUMNS.map((c) => c.title));
  return [header, '-'.repeat(header.length), ...cells.map(line)].join('\n');
}

/**
 * The whole human report: what was generated, the table, how to read it, the capacity the log
 * required and the rule behind it, and the verdict.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     process.stdout.write(formatReport(await runDemo(DEFAULT_SCENARIO)));
 */
export function formatReport(result: DemoResult): string {
  const { config: c, scenario: s, rows } = result;
  const out: string[] = [];
  out.push(
    `onceflow demo: ${fmt(s.rounds * 2)} settlements (${plural(s.rounds, 'round')}) by ${plural(s.players, 'player')} ` +
      `in ${plural(s.rooms, 'room')}, seed ${c.seed}, overlap ${c.overlap}`,
  );
  out.push(
    `delivered ${fmt(s.settlementDeliveries)} settlements to every strategy: ${fmt(s.duplicates)} duplicates, ` +
      `${fmt(s.replayed)} replayed by queue recovery, ${fmt(s.lateFinals)} finals after a move` +
      (c.overlap === 2
        ? ` (${fmt(result.bounds.finalAfterNextInstant)} first delivered after the next round's instant)`
        : '') +
      `, ${fmt(s.reorders)} reorders; plus ${fmt(s.joins)} joins`,
  );
  out.push('', formatTable(rows), '');
  out.push(...howToRead(result), '');
  out.push(...capacityLines(result), '');
  out.push(verdict(result));
  return `${out.join('\n')}\n`;
}

function row(result: DemoResult, id: string): StrategyRow | undefined {
  return result.rows.find((r) => r.id === id);
}

// Text lines of the report are wrapped to this width; the table is as wide as it needs to be.
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

function howToRead(result: DemoResult): string[] {
  const paragraphs = [
    'How to read it: money in minor units, against the truth (each settlement applied once, under its own ' +
      'room). blocked = deliveries refused as duplicates (by the sequence guard: as "past"); stale = not ' +
      'applied, referred to reconciliation; lost = settled but never applied; doubled = |net| x extra ' +
      'applications; misbooked = money booked under another room, wrong room = how many settlements; rooms off = rooms whose total differs from the ' +
      'truth; settl./s = settlement deliveries per second through that strategy alone. --json has the counts too.',
  ];
  const c4 = row(result, `onceflow-c${SETTLEMENT_CAPACITY}`);
  const c3 = row(result, `onceflow-c${TOO_SMALL_CAPACITY}`);
  const c3n = row(result, `onceflow-c${TOO_SMALL_CAPACITY}-no-order`);
  if (c4) {
    paragraphs.push(
      `- ${c4.strategy}: must show 0 lost, 0 doubled, 0 misbooked, 0 rooms off` +
        (isExact(c4) ? ': it does.' : `: IT DOES NOT (${lossSummary(c4)}).`) +
        (c4.stale > 0
          ? ` ${fmt(c4.stale)} repeats outran the window and came back \`stale\` instead of being applied twice` +
            ` (${fmt(c4.staleOnlyLost)} settlements were only ever stale; they count as lost).`
          : ''),
    );
  }
  if (c3 && c3n) {
    paragraphs.push(
      `- capacity ${TOO_SMALL_CAPACITY} is one too small, so the bound is tight: without orders ` +
        `${fmt(c3n.doubledCount)} repeats the window had already forgotten were applied again ` +
        `(${fmt(c3n.moneyDoubled)} doubled). With orders the horizon answered \`stale\` ${fmt(c3.stale)} times ` +
        `instead and ${fmt(c3.moneyDoubled)} was doubled: a too-small window fails safe ` +
        `(${fmt(c3.staleOnlyLost)} settlements were only ever stale).`,
    );
  }
  const guard = row(result, 'sequence-guard');
  if (guard) {
    paragraphs.push(
      '- sequence guard: the current round must pass (its two settlements share one number), so repeats of it ' +
        `double (${fmt(guard.moneyDoubled)}); every room counts its own rounds, so after a move to a room with a ` +
        `lower counter whole rounds look "past" and are dropped (${fmt(guard.moneyLost)} lost); a final that ` +
        `arrives after a move goes to the new room (${fmt(guard.moneyMisbooked)} misbooked).`,
    );
  }
  const flags = row(result, 'per-type-flags');
  if (flags) {
    paragraphs.push(
      '- per-type flags: it remembers one round, so a replay of rounds r-1 and r or a repeat from the previous ' +
        `block resets the flags and is applied again (${fmt(flags.moneyDoubled)} doubled); a final after a move ` +
        `goes to the new room (${fmt(flags.moneyMisbooked)} misbooked)` +
        (flags.lostCount > 0
          ? `; two rooms' counters met at the same round number and a new round was taken for a repeat ` +
            `(${fmt(flags.moneyLost)} lost).`
          : '.'),
    );
  }
  const none = row(result, 'no-dedup');
  if (none) {
    paragraphs.push(
      `- no dedup: every one of the ${fmt(none.doubledCount)} repeats is applied (${fmt(none.moneyDoubled)} doubled).`,
    );
  }
  return paragraphs.flatMap((p) => wrap(p));
}

function capacityLines(result: DemoResult): string[] {
  const { requiredCapacity: need, bounds, worst, config } = result;
  const paragraphs = [
    `Capacity this log required: ${need.capacity}` +
      (worst
        ? ` (${worst.owner}: ${need.others} distinct other signatures were first seen between the first and ` +
          `the last delivery of ${worst.signature}).`
        : ' (nothing was delivered twice).'),
    `Rule (DESIGN §3.2): ${CAPACITY_RULE}. If (a) each round's final is first delivered before the next ` +
      "round's instant and (b) every repeat of a round arrives before the round after next begins, that count " +
      `is at most 3 (the sibling and the next round's two): C = ${SETTLEMENT_CAPACITY} = 2 settlements x 2 ` +
      'rounds. With (a) relaxed it reaches 4 and C must be 5.',
    `This log broke (a) ${fmt(bounds.finalAfterNextInstant)} times and (b) ` +
      `${fmt(bounds.repeatAfterRoundAfterNext)} times, over ${fmt(bounds.rounds)} pairs of consecutive rounds.`,
  ];
  if (need.capacity > SETTLEMENT_CAPACITY) {
    paragraphs.push(
      `It needed ${need.capacity} > ${SETTLEMENT_CAPACITY}` +
        (config.overlap === 2 ? ' because --overlap 2 relaxes (a)' : '') +
        `: the capacity-${SETTLEMENT_CAPACITY} window ran outside its derivation, and its horizon answered ` +
        '`stale` where a window without orders would have doubled. Refute the derivation before changing the ' +
        'number.',
    );
  }
  return paragraphs.flatMap((p) => wrap(p));
}

function lossSummary(r: StrategyRow): string {
  return (
    `${fmt(r.moneyLost)} lost, ${fmt(r.moneyDoubled)} doubled, ` +
    `${fmt(r.moneyMisbooked)} misbooked, ${fmt(r.roomsOff)} rooms off`
  );
}

function verdict(result: DemoResult): string {
  const ref = row(result, result.referenceId);
  if (ref === undefined) return 'No onceflow reference row was run.';
  return result.ok
    ? `OK: ${ref.strategy} applied every settlement exactly once, under its own room.`
    : `FAILED: ${ref.strategy}: ${lossSummary(ref)}.`;
}

/**
 * The `--json` view: one object with the config, the required capacity (a number) and the rows.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     process.stdout.write(`${JSON.stringify(toJson(result))}\n`);
 */
export function toJson(result: DemoResult): Record<string, unknown> {
  return {
    config: result.config,
    requiredCapacity: result.requiredCapacity.capacity,
    rule: CAPACITY_RULE,
    worst: result.worst === null ? null : { ...result.worst, others: result.requiredCapacity.others },
    scenario: result.scenario,
    bounds: result.bounds,
    rows: result.rows,
    reference: result.referenceId,
    ok: result.ok,
    generateMs: result.generateMs,
  };
}
