#!/usr/bin/env node
// Builds dist/ with `npx tsc -p tsconfig.build.json` only when dist/cli/main.js is missing or
// older than some file under src/, so `npm start` is fast on every run after the first.
// Build output goes to stderr: stdout belongs to the command that runs after us (`--json`).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const target = join(root, 'dist', 'cli', 'main.js');

/** The newest modification time (ms) of any file under `dir`. */
function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const time = entry.isDirectory() ? newest(path) : statSync(path).mtimeMs;
    if (time > latest) latest = time;
  }
  return latest;
}

let built = -1;
try {
  built = statSync(target).mtimeMs;
} catch {
  // missing: build
}

if (built < 0 || built < newest(join(root, 'src'))) {
  process.stderr.write(built < 0 ? 'Building (dist/ is missing)...\n' : 'Building (src/ changed)...\n');
  const result = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: ['ignore', 2, 2],
    shell: process.platform === 'win32',
  });
  if (result.status !== 0) {
    process.stderr.write(`Build failed (tsc exit code ${result.status ?? result.signal}).\n`);
    process.exit(1);
  }
}
