#!/usr/bin/env node
// The `onceflow` command: `demo`, `migrate` and `serve`; each subcommand parses its own options.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { demoExitCode, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './demo/exit-code.js';
import { beforeInterrupt, interruptedBy } from './demo/interrupt.js';
import {
  DEMO_HELP,
  DEMO_OPTIONS,
  type DemoArgValues,
  demoCommandFrom,
  gatewayCommandFrom,
  refuseUnknown,
} from './demo/options.js';
import { progressBar } from './demo/progress.js';
import { formatReport, toJson } from './demo/report.js';
import { runDemo } from './demo/run.js';
import { DemoFailure } from './failure.js';
import { MIGRATE_HELP, migrateCommand, UsageError } from './migrate-command.js';
import { redactUrl } from './redact-url.js';
import { SERVE_HELP, ServeUsageError, serveCommand } from './serve-command.js';

const HELP = `Usage: onceflow <command> [options]

Commands:
  demo            run the exactly-once demo, or with --gateway the WebSocket gateway's
                  (see \`onceflow demo --help\`)
  migrate         create or update the PostgreSQL store's schema (see \`onceflow migrate --help\`)
  serve           serve /metrics, /healthz and a live status page; with --gateway a WebSocket
                  gateway node too (see \`onceflow serve --help\`)
  help [command]  this help, or a command's

Options:
  -h, --help      this help
  -v, --version   the version of onceflow
`;

/** The help of each command, for \`onceflow help <command>\`. */
const COMMAND_HELP: Readonly<Record<string, string>> = {
  demo: DEMO_HELP,
  migrate: MIGRATE_HELP,
  serve: SERVE_HELP,
  help: HELP,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help') {
    (command === undefined ? process.stderr : process.stdout).write(HELP);
    return command === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (command === 'help') {
    // \`onceflow help\` and \`onceflow help demo\`, as git and npm take them.
    const [topic, ...extra] = rest;
    const text =
      topic === undefined ? HELP : Object.hasOwn(COMMAND_HELP, topic) ? COMMAND_HELP[topic] : undefined;
    if (text === undefined || extra.length > 0) {
      const what = extra.length > 0 ? `argument "${extra[0]}"` : `command "${topic}"`;
      process.stderr.write(`onceflow help: unknown ${what}\n\n${HELP}`);
      return EXIT_USAGE;
    }
    process.stdout.write(text);
    return EXIT_OK;
  }
  if (command === '--version' || command === '-v') {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    process.stdout.write(`${pkg.version}\n`);
    return EXIT_OK;
  }
  if (command === 'migrate') {
    try {
      return await migrateCommand(rest, process.stdout);
    } catch (err) {
      if (
        err instanceof UsageError ||
        (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS')
      ) {
        process.stderr.write(
          `onceflow migrate: ${redactUrl((err as Error).message)}\nRun \`onceflow migrate --help\` for the options.\n`,
        );
        return EXIT_USAGE;
      }
      throw err;
    }
  }
  if (command === 'serve') {
    try {
      return await serveCommand(rest, process.stdout);
    } catch (err) {
      if (
        err instanceof ServeUsageError ||
        (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS')
      ) {
        process.stderr.write(
          `onceflow serve: ${redactUrl((err as Error).message)}\nRun \`onceflow serve --help\` for the options.\n`,
        );
        return EXIT_USAGE;
      }
      throw err;
    }
  }
  if (command !== 'demo') {
    const what = command.startsWith('-') ? 'option' : 'command';
    process.stderr.write(`onceflow: unknown ${what} "${command}"\n\n${HELP}`);
    return EXIT_USAGE;
  }

  let parsed: DemoArgValues;
  try {
    refuseUnknown(rest);
    parsed = parseArgs({
      args: withNegativeValues(rest),
      options: DEMO_OPTIONS,
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    return usageError(err);
  }
  if (parsed.help) {
    process.stdout.write(DEMO_HELP);
    return EXIT_OK;
  }
  if (parsed.gateway) return gatewayDemo(parsed);
  let demo: ReturnType<typeof demoCommandFrom>;
  try {
    demo = demoCommandFrom(parsed);
  } catch (err) {
    return usageError(err);
  }

  // --serve: the page is up before the run (a port in use fails here, before any work).
  const page =
    demo.serve === undefined
      ? undefined
      : await (await import('./status/demo-serve.js')).startDemoStatusPage(demo.serve, process.stderr);
  await page?.play(demo.config);
  const bar = progressBar(process.stderr, demo.progress);
  // An interrupt stops the bar before it says what it undoes (see demo/interrupt.ts).
  beforeInterrupt(() => bar.stop());
  let result: Awaited<ReturnType<typeof runDemo>>;
  try {
    result = await runDemo(demo.config, bar.update);
  } finally {
    bar.stop();
  }
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  process.stdout.write(demo.json ? `${JSON.stringify(toJson(result))}\n` : formatReport(result, columns));
  await page?.lingerAndClose();
  return demoExitCode(result);
}

/** `onceflow demo --gateway`: the gateway demo, its report or JSON, and the same exit codes. */
async function gatewayDemo(parsed: DemoArgValues): Promise<number> {
  let demo: ReturnType<typeof gatewayCommandFrom>;
  try {
    demo = gatewayCommandFrom(parsed);
  } catch (err) {
    return usageError(err);
  }
  // Loaded here: the gateway demo needs `ws`, an optional peer the other commands never load.
  let gateway: typeof import('./demo/gateway-run.js');
  try {
    gateway = await import('./demo/gateway-run.js');
  } catch (cause) {
    if ((cause as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw cause;
    throw new DemoFailure('`onceflow demo --gateway` needs the ws package: npm install ws', { cause });
  }
  const { formatGatewayReport, gatewayJson } = await import('./demo/gateway-report.js');
  const bar = progressBar(process.stderr, demo.progress);
  beforeInterrupt(() => bar.stop());
  let result: Awaited<ReturnType<typeof gateway.runGatewayDemo>>;
  try {
    result = await gateway.runGatewayDemo(demo.config, bar.update);
  } finally {
    bar.stop();
  }
  const columns = process.stdout.isTTY ? process.stdout.columns : undefined;
  process.stdout.write(
    demo.json ? `${JSON.stringify(gatewayJson(result))}\n` : formatGatewayReport(result, columns),
  );
  return demoExitCode(result);
}

/**
 * `--settlements -1` as `--settlements=-1`: parseArgs takes a value that starts with `-` for an
 * option of its own and refuses it as ambiguous, where the demo's own check says what is expected.
 */
function withNegativeValues(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = args[i + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    const takesValue =
      name !== undefined &&
      Object.hasOwn(DEMO_OPTIONS, name) &&
      DEMO_OPTIONS[name as keyof typeof DEMO_OPTIONS].type === 'string';
    if (takesValue && next !== undefined && /^-[\d.]/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

function usageError(err: unknown): number {
  const message = redactUrl(err instanceof Error ? err.message : String(err));
  process.stderr.write(`onceflow demo: ${message}\nRun \`onceflow demo --help\` for the options.\n`);
  return EXIT_USAGE;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (interruptedBy() === undefined) process.exitCode = code;
  },
  (err: unknown) => {
    // Interrupted: the run failing as its store is closed is no news; the handler exits.
    if (interruptedBy() !== undefined) return;
    // An expected failure (an unreachable server) is said in one line; anything else
    // is a bug of ours, and its stack is what a report needs.
    const text =
      err instanceof DemoFailure
        ? err.message
        : err instanceof Error
          ? (err.stack ?? err.message)
          : String(err);
    // Redacted whatever it is: a stack or an error of ours may quote the --store URL too.
    process.stderr.write(`onceflow: ${redactUrl(text)}\n`);
    process.exitCode = EXIT_FAILED;
  },
);
