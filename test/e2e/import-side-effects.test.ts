// package.json says "sideEffects": false: a bundler may drop any module whose exports go unused,
// so importing one must do nothing but define things. Each entry point is imported in a fresh
// process of its own, and the import must leave no trace: no asynchronous resource made by the
// package's code (a promise, a timer, an immediate, a socket: work started at import, such as a
// JIT warm-up), no handle or request left open, nothing written to stdout or stderr, no global
// and no process listener added, and no state hung on an exported value. Pure constant
// definitions (frozen tables, a precomputed CRC table) leave none of these, and are allowed.
//
// No time budget: an import's CPU time depends on the machine and its load, and every kind of
// warm-up this guards against (a pinned shape, a first call to warm the JIT) is caught by the
// checks above whatever it costs.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  sideEffects?: unknown;
};
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target !== 'string')
  .map(([subpath]) => (subpath === '.' ? 'onceflow' : `onceflow/${subpath.slice(2)}`));

/**
 * Imports `process.argv[1]` (a specifier, resolved by self-reference from the package root) and
 * prints one JSON line: what the import left behind. Async resources count as the package's when
 * a frame of their creation stack is in dist/.
 */
const PROBE = `
import { createHook } from 'node:async_hooks';
const spec = process.argv[1];
const dist = ${JSON.stringify(join(root, 'dist'))};
Error.stackTraceLimit = 200;
const made = [];
const hook = createHook({
  init(_id, type) {
    const holder = {};
    Error.captureStackTrace(holder);
    const frame = holder.stack.split('\\n').find((line) => line.includes(dist));
    if (frame !== undefined) made.push(type + ' ' + frame.trim());
  },
});
const listeners = () => process.eventNames().map((e) => String(e) + ':' + process.listenerCount(e)).sort();
const before = {
  handles: process._getActiveHandles().length,
  requests: process._getActiveRequests().length,
  globals: Reflect.ownKeys(globalThis).map(String),
  listeners: listeners(),
};
hook.enable();
const ns = await import(spec);
hook.disable();
const now = {
  handles: process._getActiveHandles().length - before.handles,
  globals: Reflect.ownKeys(globalThis).map(String).filter((k) => !before.globals.includes(k)),
  listeners: listeners().filter((l) => !before.listeners.includes(l)),
};
// State hung on an exported value (a class or function carrying what ran at import). Fastify's
// plugin protocol (what the fastify-plugin package sets: skip-override, display name, meta) is a
// declaration of what the plugin is, not state: onceflow/fastify's plugins carry it.
const PLUGIN_PROTOCOL = ['skip-override', 'fastify.display-name', 'plugin-meta'];
const decorated = Object.entries(ns)
  .filter(([, v]) => (typeof v === 'function' || (typeof v === 'object' && v !== null)))
  .filter(([, v]) =>
    Object.getOwnPropertySymbols(v).some((s) => !PLUGIN_PROTOCOL.includes(Symbol.keyFor(s) ?? '')),
  )
  .map(([k]) => k);
// Once the import's microtasks and a macrotask have run, still nothing open.
await new Promise((resolve) => setImmediate(resolve));
const later = process._getActiveHandles().length - before.handles;
// Requests (a pending fs read, ...) are counted once the loader's own have settled.
const requests = process._getActiveRequests().length - before.requests;
process.stdout.write(JSON.stringify({ made, ...now, requests, later, decorated }) + '\\n');
`;

describe('importing an entry point does nothing but define (sideEffects: false)', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('package.json declares it', () => {
    expect(pkg.sideEffects).toBe(false);
  });

  for (const entry of entries) {
    it(`${entry}: no async work, handle, output, global, listener or state left by the import`, () => {
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', PROBE, entry], {
        cwd: root,
        encoding: 'utf8',
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      // One line, the probe's: the import itself printed nothing.
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] as string)).toEqual({
        made: [],
        handles: 0,
        requests: 0,
        globals: [],
        listeners: [],
        later: 0,
        decorated: [],
      });
    });
  }
});
