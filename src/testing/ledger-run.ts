// The ledger suites' runner: each case's steps on a fresh ledger over the store under test.
import { isOnceflowError } from '../core/errors.js';
import { orderFromString } from '../core/validate.js';
import { createLedger, type LedgerEntry } from '../ledger/ledger.js';
import type { Balances, Store } from '../store/store.js';
import type { CaseEntry, ConformanceCase, ConformanceStep } from './cases.js';
import { differ, stableJson } from './differ.js';

/**
 * Runs one ledger case on `store` with a fresh ledger named `prefix + case.name`; resolves to one
 * line per step that differed (none: passed). The kit's `runCase` checks the store and options
 * first.
 */
export async function runLedgerCase(store: Store, c: ConformanceCase, prefix: string): Promise<string[]> {
  const ledger = createLedger({
    store,
    capacity: c.capacity,
    horizon: c.horizon ?? true,
    name: `${prefix}${c.name}`,
  });
  const failures: string[] = [];
  // Entries applied per owner so far: an applied entry's seq must be the next one (1, 2, 3, ...).
  const applied = new Map<string, number>();
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op})`;
    try {
      const problem = await runStep(ledger, step, applied, c.retention === undefined);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return failures;
}

type AnyLedger = ReturnType<typeof createLedger>;

async function runStep(
  ledger: AnyLedger,
  step: ConformanceStep,
  applied: Map<string, number>,
  keepsAll: boolean,
): Promise<string | undefined> {
  switch (step.op) {
    case 'race':
      return race(ledger, step, applied);
    case 'apply': {
      const e = step.entry;
      const got = await ledger.apply(toEntry(e));
      let seq: number | undefined;
      if (got.outcome === 'applied') {
        seq = (applied.get(e.owner) ?? 0) + 1;
        applied.set(e.owner, seq);
      }
      return (
        differ('outcome', got.outcome, step.expect.outcome) ??
        differ('balances', fromBigints(got.balances), step.expect.balances) ??
        differ('seq (per owner: 1, 2, 3, ...; none unless applied)', got.seq, seq)
      );
    }
    case 'resolve': {
      const e = step.entry;
      const got = await ledger.resolve(toEntry(e));
      let seq: number | undefined;
      if (got.outcome === 'applied') {
        seq = (applied.get(e.owner) ?? 0) + 1;
        applied.set(e.owner, seq);
      }
      return (
        differ('resolve outcome', got.outcome, step.expect.outcome) ??
        differ('balances', fromBigints(got.balances), step.expect.balances) ??
        differ('seq (per owner: 1, 2, 3, ...; none unless applied)', (got as { seq?: number }).seq, seq)
      );
    }
    case 'balances':
      return differ('balances', fromBigints(await ledger.balances(step.owner)), step.expect);
    case 'window': {
      const got = await ledger.window(step.owner);
      const shown: { signatures: string[]; horizon?: string } = { signatures: got.signatures };
      if (got.horizon !== undefined) shown.horizon = String(got.horizon);
      return differ('window', shown, step.expect);
    }
    case 'journal': {
      const got = await ledger.journal(step.query);
      const { signatures, scopes, metas } = step.expect;
      return (
        differ(
          'journal signatures',
          got.map((e) => e.signature),
          signatures,
        ) ??
        (scopes &&
          differ(
            'journal scopes',
            got.map((e) => e.scope ?? null),
            scopes,
          )) ??
        (metas &&
          differ(
            'journal metas',
            got.map((e) => e.meta),
            metas,
          )) ??
        checkSeqs(got, keepsAll && step.query.scope === undefined && step.query.after === undefined)
      );
    }
    case 'journal-pages': {
      // Pages through one owner's journal with `after` = the last seq seen, until a page is empty.
      const pages: string[][] = [];
      let after = 0;
      for (let i = 0; i <= step.expect.length; i++) {
        const page = await ledger.journal({ owner: step.owner, after, limit: step.pageSize });
        pages.push(page.map((e) => e.signature));
        if (page.length === 0) break;
        after = (page.at(-1) as { seq: number }).seq;
      }
      return differ('journal pages', pages, step.expect);
    }
    case 'totals':
      return differ('totals', fromBigints(await ledger.totals(step.scope)), step.expect);
    case 'invalid': {
      const before = await Promise.all([ledger.journal({}), ledger.window(String(step.entry.owner ?? 'p1'))]);
      try {
        if (step.via === 'resolve') await ledger.resolve(step.entry as unknown as LedgerEntry);
        else await ledger.apply(step.entry as unknown as LedgerEntry);
        return `expected ${step.code}, but the ${step.via ?? 'apply'} was accepted`;
      } catch (err) {
        if (!isOnceflowError(err)) return `expected ${step.code}, got ${String(err)}`;
        if (err.code !== step.code) return `expected ${step.code}, got ${err.code}`;
      }
      const after = await Promise.all([ledger.journal({}), ledger.window(String(step.entry.owner ?? 'p1'))]);
      return differ('state after invalid input', stableJson(after), stableJson(before));
    }
  }
}

/**
 * The `race` step: every call started before any is awaited, each entry's copies interleaved with
 * the others', so a store that decides in two round trips sees its repeats between them.
 */
async function race(
  ledger: AnyLedger,
  step: Extract<ConformanceStep, { op: 'race' }>,
  applied: Map<string, number>,
): Promise<string | undefined> {
  const calls: {
    entry: (typeof step.entries)[number];
    answer: Promise<{ outcome: string; seq?: number }>;
  }[] = [];
  const rounds = Math.max(0, ...step.entries.map((e) => e.copies));
  for (let round = 0; round < rounds; round++) {
    for (const entry of step.entries) {
      if (round >= entry.copies) continue;
      const call = toEntry(entry);
      calls.push({ entry, answer: entry.via === 'resolve' ? ledger.resolve(call) : ledger.apply(call) });
    }
  }
  const settled = await Promise.allSettled(calls.map((c) => c.answer));
  const problems: string[] = [];
  const seqs = new Map<string, number[]>();
  for (const entry of step.entries) {
    const mine = settled.filter((_, i) => calls[i]?.entry === entry);
    const what = `${entry.via ?? 'apply'} x${entry.copies} of ${entry.owner}/${entry.signature}`;
    const failed = mine.find((r) => r.status === 'rejected');
    if (failed) {
      problems.push(`${what}: threw ${String((failed as PromiseRejectedResult).reason)}`);
      continue;
    }
    const answers = mine.map((r) => (r as PromiseFulfilledResult<{ outcome: string; seq?: number }>).value);
    const outcomes = answers.map((a) => a.outcome);
    const wanted = entry.expect === 'once' ? 1 : 0;
    const booked = outcomes.filter((o) => o === 'applied').length;
    if (booked !== wanted || outcomes.some((o) => o !== 'applied' && o !== 'duplicate')) {
      problems.push(
        `${what}: expected ${wanted === 1 ? 'exactly one applied and the others' : 'every one'} duplicate, got ${stableJson(tally(outcomes))}`,
      );
    }
    for (const a of answers) {
      if (a.outcome === 'applied') seqs.set(entry.owner, [...(seqs.get(entry.owner) ?? []), a.seq as number]);
    }
  }
  // The applied calls of an owner took its next seqs, one each, in whatever order they ran.
  for (const [owner, got] of seqs) {
    const from = applied.get(owner) ?? 0;
    const expected = got.map((_, i) => from + i + 1);
    const problem = differ(
      `seqs of ${owner}'s applied calls (its next ones, once each)`,
      [...got].sort((a, b) => a - b),
      expected,
    );
    if (problem) problems.push(problem);
    applied.set(owner, from + got.length);
  }
  for (const [owner, balances] of Object.entries(step.expect.balances)) {
    const problem = differ(`balances of ${owner}`, fromBigints(await ledger.balances(owner)), balances);
    if (problem) problems.push(problem);
  }
  for (const [owner, signatures] of Object.entries(step.expect.journal)) {
    const held = (await ledger.journal({ owner })).map((e) => e.signature).sort();
    const problem = differ(`journal of ${owner} (sorted)`, held, [...signatures].sort());
    if (problem) problems.push(problem);
  }
  return problems.length > 0 ? problems.join('; ') : undefined;
}

function tally(outcomes: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return counts;
}

/**
 * Journal seqs are numbered per owner (DESIGN §3.3 and the Redis key layout: a ledger-wide counter
 * would be a cross-slot key): 1, 2, 3, ... for each owner, so the same history gives the same seqs
 * on every store. In a query that keeps all of an owner's entries (no scope filter, no `after`)
 * they are exactly 1, 2, 3, ... (the `ledger` cases keep fewer entries than any retention would
 * drop; the `ledger-retention` cases do drop some, so there they only increase); in any query
 * they increase.
 */
function checkSeqs(entries: { owner: string; seq: number }[], whole: boolean): string | undefined {
  const last = new Map<string, number>();
  for (const { owner, seq } of entries) {
    const previous = last.get(owner);
    const ok =
      Number.isSafeInteger(seq) &&
      seq >= 1 &&
      (previous === undefined ? !whole || seq === 1 : whole ? seq === previous + 1 : seq > previous);
    if (!ok) {
      return `journal seqs of ${owner}: ${seq} after ${previous ?? 'none'} (expected per-owner numbering 1, 2, 3, ...)`;
    }
    last.set(owner, seq);
  }
  return undefined;
}

function toEntry(e: CaseEntry): LedgerEntry {
  const entry: LedgerEntry = { owner: e.owner, signature: e.signature, deltas: toBigints(e.deltas) };
  if (e.scope !== undefined) entry.scope = e.scope;
  if (e.order !== undefined) entry.order = orderFromString(e.order);
  if (e.meta !== undefined) entry.meta = e.meta as NonNullable<LedgerEntry['meta']>;
  return entry;
}

function toBigints(deltas: Record<string, string>): Record<string, bigint> {
  return Object.fromEntries(Object.entries(deltas).map(([k, v]) => [k, BigInt(v)]));
}

function fromBigints(balances: Balances): Record<string, string> {
  return Object.fromEntries(Object.entries(balances).map(([k, v]) => [k, v.toString()]));
}
