// The runner of the ordering suites (cases in ordering-cases.ts): version gates, checkpoints,
// timestamps and leases against the store, each answer compared with what the case expects.

import type { Store } from '../store/store.js';
import { differ } from './differ.js';
import type { OrderingCase, OrderingStep } from './ordering-cases.js';

type Ops = Required<
  Pick<
    Store,
    'versionUpsert' | 'versionGet' | 'checkpointSave' | 'checkpointLoad' | 'timestampAdvance' | 'leaseRenew'
  >
>;

/** Runs one ordering case on `store`, its names under `prefix`; resolves to its failures. */
export async function runOrdering(store: Store, c: OrderingCase, prefix: string): Promise<string[]> {
  const ops = store as Ops & Store;
  const nameOf = (name: string | undefined) => `${prefix}/${name ?? 'n'}`;
  const failures: string[] = [];
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op})`;
    try {
      const problem = await orderingStep(step);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return failures;

  async function orderingStep(step: OrderingStep): Promise<string | undefined> {
    switch (step.op) {
      case 'version-upsert': {
        const got = await ops.versionUpsert(nameOf(step.name), step.key, step.version, step.value);
        return differ('upsert', { outcome: got?.outcome, version: got?.version }, step.expect);
      }
      case 'version-get':
        return differ('stored', (await ops.versionGet(nameOf(step.name), step.key)) ?? null, step.expect);
      case 'version-race': {
        const gate = nameOf(step.name);
        const got = await Promise.all(
          step.values.map((value) => ops.versionUpsert(gate, step.key, step.version, value)),
        );
        const winners = step.values.filter((_, j) => got[j]?.outcome === 'applied');
        if (winners.length !== 1)
          return `racing upserts: expected exactly one applied, got ${winners.length}`;
        const others = got.filter((r) => r.outcome !== 'applied');
        const wrong = others.find((r) => r.outcome !== 'duplicate' || r.version !== step.version);
        if (wrong)
          return `racing upserts: the others must be duplicates of ${step.version}, got ${JSON.stringify(wrong)}`;
        return differ('stored after the race', await ops.versionGet(gate, step.key), {
          version: step.version,
          value: winners[0],
        });
      }
      case 'checkpoint-save':
        return differ(
          'save',
          await ops.checkpointSave(nameOf(step.name), step.revision, step.data),
          step.expect,
        );
      case 'checkpoint-load':
        return differ('loaded', (await ops.checkpointLoad(nameOf(step.name))) ?? null, step.expect);
      case 'checkpoint-race': {
        const name = nameOf(step.name);
        const got = await Promise.all(
          step.datas.map((data) => ops.checkpointSave(name, step.revision, data)),
        );
        const winners = step.datas.filter((_, j) => got[j] === 'saved');
        if (winners.length !== 1) return `racing saves: expected exactly one saved, got ${winners.length}`;
        return differ('loaded after the race', await ops.checkpointLoad(name), {
          revision: step.revision,
          data: winners[0],
        });
      }
      case 'timestamp-advance':
        return differ('timestamp', await ops.timestampAdvance(nameOf(step.name), step.ms), step.expect);
      case 'lease-renew': {
        const got = await ops.leaseRenew(nameOf(step.name), step.run, step.ms, step.takeover);
        return differ('lease', { held: got?.held, ms: got?.ms }, step.expect);
      }
      case 'lease-race': {
        const name = nameOf(step.name);
        const got = await Promise.all(
          step.runs.map((run) => ops.leaseRenew(name, run, step.ms, step.takeover)),
        );
        const held = got.filter((r) => r.held);
        if (held.length !== 1)
          return `racing takeovers: expected exactly one to hold the name, got ${held.length}`;
        const wrong = got.find((r) => !r.held && r.ms !== held[0]?.ms);
        if (wrong)
          return `racing takeovers: a refused run must be told the winner's lease, got ${JSON.stringify(wrong)}`;
        return undefined;
      }
    }
  }
}
