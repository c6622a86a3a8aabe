import { redactUrl } from '../redact-url.js';
import { WORKLOAD_MS } from './gateway-plan.js';
import type { GatewayDemoResult, GatewayRow } from './gateway-run.js';
import { wrap } from './report.js';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const WIDTH = 100;

const COLUMNS: readonly { title: string; left?: boolean; cell: (r: GatewayRow) => string }[] = [
  { title: 'gateway', left: true, cell: (r) => r.gateway },
  { title: 'direction', left: true, cell: (r) => r.direction },
  { title: 'sent', cell: (r) => fmt(r.sent) },
  { title: 'once', cell: (r) => fmt(r.once) },
  { title: 'lost', cell: (r) => fmt(r.lost) },
  { title: 'doubled', cell: (r) => fmt(r.doubled) },
  { title: 'out of order', cell: (r) => fmt(r.outOfOrder) },
];

/** The rows as an aligned table. */
export function formatGatewayTable(rows: readonly GatewayRow[]): string {
  const widths = COLUMNS.map((c) => Math.max(c.title.length, ...rows.map((r) => c.cell(r).length)));
  const line = (values: readonly string[]): string =>
    values
      .map((v, i) => (COLUMNS[i]?.left ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const header = line(COLUMNS.map((c) => c.title));
  return [header, '-'.repeat(header.length), ...rows.map((r) => line(COLUMNS.map((c) => c.cell(r))))].join(
    '\n',
  );
}

// The words of the table, one line each.
const WORDS: readonly [string, string][] = [
  [
    'client-to-server',
    "each client's messages, counted by the handler's effect (a count per client and message)",
  ],
  ['server-to-client', 'what the backend published to each client, counted as the client delivered it'],
  ['once', 'arrived exactly once'],
  ['lost', 'never arrived'],
  ['doubled', 'arrived more than once'],
  ['out of order', 'arrived after a later message of the same client'],
];

/**
 * The human report of `onceflow demo --gateway`: what ran, the table, the words, and the verdict.
 *
 * Usage (internal to the CLI): `process.stdout.write(formatGatewayReport(await runGatewayDemo(c)))`
 */
export function formatGatewayReport(result: GatewayDemoResult, width = WIDTH): string {
  const c = result.config;
  const w = Math.min(width, WIDTH);
  const out = [
    ...wrap(
      `onceflow demo --gateway: ${fmt(c.clients)} clients on ${result.nodes} nodes on loopback, seed ${c.seed}, ` +
        `${(WORKLOAD_MS / 1000).toFixed(0)} s of workload per gateway; onceflow's nodes share the ${result.store} store.`,
      w,
    ),
    ...wrap(
      `Each client sent ${fmt(c.messages)} messages in bursts and was published ${fmt(c.messages)} by a backend, ` +
        `while ${fmt(result.moves)} moves to another node and ${result.kills} node kills (every socket destroyed ` +
        `at once, the node back on its port 0.4-0.9 s later) happened on the same schedule for both gateways ` +
        `(reconnects: onceflow ${fmt(result.reconnects.onceflow)}, naive ${fmt(result.reconnects.naive)}).`,
      w,
    ),
    ...wrap(
      'naive: per-node dedup windows and stream counters in memory, nothing in a store, no resume ' +
        '(it answers `recovered: true` all the same).',
      w,
    ),
    ...wrap(
      "The nodes run in this process: a killed node's running handlers still finish and record their " +
        'outcome. After a real crash such a handler runs again on the re-send, unless its effect is ' +
        'keyed by the message (docs/ws.md, "exactly once, or at least once").',
      w,
    ),
    '',
    formatGatewayTable(result.rows),
    '',
  ];
  const pad = Math.max(...WORDS.map(([word]) => word.length));
  for (const [word, meaning] of WORDS)
    out.push(...wrap(`${word.padEnd(pad)}  ${meaning}`, w, ' '.repeat(pad + 2)));
  out.push('', ...wrap(verdict(result), w), `(${(result.ms / 1000).toFixed(1)} s)`);
  return `${out.join('\n')}\n`;
}

function verdict(result: GatewayDemoResult): string {
  if (result.ok)
    return 'OK: onceflow handled every client message once and in order, and delivered every published message once and in order, across moves and node kills.';
  const bad = result.rows
    .filter((r) => r.gateway === 'onceflow' && (r.lost > 0 || r.doubled > 0 || r.outOfOrder > 0))
    .map(
      (r) =>
        `${r.direction}: ${fmt(r.lost)} lost, ${fmt(r.doubled)} doubled, ${fmt(r.outOfOrder)} out of order`,
    );
  return `FAILED: onceflow ${bad.join('; ')}.`;
}

/**
 * The `--json` view: the config (the store URL redacted), the rows and the verdict.
 *
 * Usage (internal to the CLI): `process.stdout.write(`${JSON.stringify(gatewayJson(result))}\n`)`
 */
export function gatewayJson(result: GatewayDemoResult): Record<string, unknown> {
  return {
    config:
      result.config.store === undefined
        ? result.config
        : { ...result.config, store: redactUrl(result.config.store) },
    store: result.store,
    nodes: result.nodes,
    kills: result.kills,
    moves: result.moves,
    reconnects: result.reconnects,
    rows: result.rows,
    ok: result.ok,
    ms: Math.round(result.ms),
  };
}
