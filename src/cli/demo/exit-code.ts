/** Exit codes of the `onceflow` command: 0 ok, 1 the onceflow reference row failed (or the demo crashed), 2 invalid usage. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
/** Interrupted by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal's number, as a shell reports it. */
export const EXIT_SIGINT = 130;
export const EXIT_SIGTERM = 143;

/**
 * The exit code of a finished demo run: 1 when its reference row is not exact (`ok`, see
 * `isExact`), so a script or CI job running the demo fails on a lost, doubled or misbooked
 * settlement. Pure, so the rule is tested without spawning the CLI.
 *
 * Usage (internal to the CLI):
 *
 *     process.exitCode = demoExitCode(await runDemo(config));
 */
export function demoExitCode(result: { readonly ok: boolean }): number {
  return result.ok ? EXIT_OK : EXIT_FAILED;
}
