#!/usr/bin/env node
// Writes dashboards/onceflow.json, the Grafana dashboard of onceflow/metrics, from the metric table
// of src/metrics (buildDashboard, read from the build: `dist/` is built first when stale).
// `node scripts/gen-dashboard.mjs --check` exits 1 when the committed file is stale; the unit test
// src/metrics/dashboard.test.ts makes the same comparison in-process.
// The comparison is of the parsed JSON: the formatter may lay the committed file out its own way.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const outFile = join(root, 'dashboards', 'onceflow.json');

execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], { cwd: root, stdio: 'inherit' });
const { buildDashboard } = await import(pathToFileURL(join(root, 'dist', 'metrics', 'index.js')).href);
const dashboard = buildDashboard();

if (process.argv.includes('--check')) {
  let committed;
  try {
    committed = JSON.parse(readFileSync(outFile, 'utf8'));
  } catch {
    committed = undefined;
  }
  if (!isDeepStrictEqual(committed, dashboard)) {
    process.stderr.write('dashboards/onceflow.json is stale: run `node scripts/gen-dashboard.mjs`\n');
    process.exit(1);
  }
} else {
  writeFileSync(outFile, `${JSON.stringify(dashboard, null, 2)}\n`);
}
