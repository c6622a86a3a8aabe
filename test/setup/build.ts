import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Global setup of the projects that run the built package: the end-to-end tests (the CLI, the
 * package imported by its own name in README and guide blocks, examples) and the multi-process
 * tests, whose worker fixtures import `onceflow`. Builds `dist/` when it is missing or older than
 * `src/` (scripts/ensure-built.mjs, as `npm start` does), so the second project of a run to get
 * here finds it current: Vitest runs the projects' global setups one after another.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, ['scripts/ensure-built.mjs'], { cwd: root, stdio: 'inherit' });
}
