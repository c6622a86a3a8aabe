import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Global setup of the end-to-end project: builds `dist/` once per run, as the tests there run the
 * built CLI and import the package by its own name (README and guide blocks, examples).
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
