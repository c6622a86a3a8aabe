// @ts-check
// A store of your own: the ledger half of the Store contract over plain Maps, typed against
// onceflow/store and checked by the conformance kit. Run: npm run build && node examples/own-store.mjs
import assert from 'node:assert/strict';
import { createLedger, SignatureWindow } from 'onceflow';
import { conformance } from 'onceflow/testing';

/**
 * @typedef {import('onceflow/store').Store} Store
 * @typedef {import('onceflow/store').JournalEntry} JournalEntry
 * @typedef {import('onceflow/store').LedgerApplyCommand} LedgerApplyCommand
 * @typedef {{ window: SignatureWindow, balances: Map<string, bigint>, seq: number }} Owner
 */

/**
 * Every operation decides synchronously before its first `await`, so each one is atomic in this
 * process, as the contract asks. The journal keeps every entry: a resolve can then prove any
 * absent entry new.
 * @returns {Store}
 */
function mapStore() {
  /** @type {Map<string, { owners: Map<string, Owner>, journal: JournalEntry[], totals: Map<string, Map<string, bigint>> }>} */
  const ledgers = new Map();
  const ledgerOf = (/** @type {string} */ name) => {
    let state = ledgers.get(name);
    if (state === undefined)
      ledgers.set(name, (state = { owners: new Map(), journal: [], totals: new Map() }));
    return state;
  };
  const toRecord = (/** @type {Map<string, bigint> | undefined} */ map) => Object.fromEntries(map ?? []);

  /** Balances, scope totals and the journal entry of an admitted command; returns its seq. */
  const book = (/** @type {LedgerApplyCommand} */ cmd, /** @type {Owner} */ owner) => {
    const state = ledgerOf(cmd.ledger);
    const totals = cmd.scope === undefined ? undefined : (state.totals.get(cmd.scope) ?? new Map());
    if (cmd.scope !== undefined && totals) state.totals.set(cmd.scope, totals);
    for (const [field, amount] of cmd.deltas) {
      owner.balances.set(field, (owner.balances.get(field) ?? 0n) + amount);
      totals?.set(field, (totals.get(field) ?? 0n) + amount);
    }
    const seq = ++owner.seq;
    /** @type {JournalEntry} */
    const entry = {
      seq,
      owner: cmd.owner,
      signature: cmd.signature,
      deltas: Object.fromEntries(cmd.deltas),
      at: Date.now(),
      ...(cmd.scope === undefined ? {} : { scope: cmd.scope }),
      ...(cmd.order === undefined ? {} : { order: cmd.order }),
      ...(cmd.meta === undefined ? {} : { meta: structuredClone(cmd.meta) }),
    };
    state.journal.push(entry);
    return seq;
  };
  const ownerOf = (/** @type {LedgerApplyCommand} */ cmd) => {
    const owners = ledgerOf(cmd.ledger).owners;
    let owner = owners.get(cmd.owner);
    if (owner === undefined) {
      owner = { window: new SignatureWindow({ capacity: cmd.capacity }), balances: new Map(), seq: 0 };
      owners.set(cmd.owner, owner);
    }
    return owner;
  };

  return {
    kind: 'map',
    async ledgerApply(cmd) {
      const owner = ownerOf(cmd);
      // The window decides fresh, duplicate or stale (below its horizon), as every store's does.
      const outcome = owner.window.admit(cmd.signature, cmd.horizon ? cmd.order : undefined);
      if (outcome !== 'fresh') return { outcome, balances: toRecord(owner.balances) };
      const seq = book(cmd, owner);
      return { outcome: 'applied', balances: toRecord(owner.balances), seq };
    },
    async ledgerResolve(cmd) {
      const owner = ownerOf(cmd);
      const journal = ledgerOf(cmd.ledger).journal;
      const held = journal.some((e) => e.owner === cmd.owner && e.signature === cmd.signature);
      if (owner.window.has(cmd.signature) || held) {
        return { outcome: 'duplicate', balances: toRecord(owner.balances) };
      }
      // Nothing is ever dropped from this journal, so absence proves the entry new.
      owner.window.insert(cmd.signature, cmd.horizon ? cmd.order : undefined);
      const seq = book(cmd, owner);
      return { outcome: 'applied', balances: toRecord(owner.balances), seq };
    },
    async ledgerBalances(ledger, owner) {
      return toRecord(ledgers.get(ledger)?.owners.get(owner)?.balances);
    },
    async ledgerWindow(ledger, owner) {
      const window = ledgers.get(ledger)?.owners.get(owner)?.window;
      if (window?.horizon === undefined) return { signatures: window?.signatures() ?? [] };
      return { signatures: window.signatures(), horizon: window.horizon };
    },
    async ledgerJournal(ledger, { owner, scope, after, limit = Number.POSITIVE_INFINITY }) {
      const matching = (ledgers.get(ledger)?.journal ?? []).filter(
        (e) =>
          (owner === undefined || e.owner === owner) &&
          (scope === undefined || e.scope === scope) &&
          (after === undefined || e.seq > after),
      );
      return matching.slice(0, limit).map((e) => ({ ...e, deltas: { ...e.deltas } }));
    },
    async ledgerScopeTotals(ledger, scope) {
      return toRecord(ledgers.get(ledger)?.totals.get(scope));
    },
  };
}

// The kit: the ledger suite is required; the other suites are reported unsupported, not failed.
const store = mapStore();
const results = await conformance.run(store, { require: ['ledger'] });
assert.deepEqual(
  results.filter((r) => r.failures.length > 0),
  [],
);
const passed = results.filter((r) => r.suite === 'ledger' && r.unsupported === undefined);
console.log(`ledger suite: ${passed.length} cases passed`);
console.log(
  `unsupported: ${[...new Set(results.filter((r) => r.unsupported).map((r) => r.suite))].join(', ')}`,
);

// And the store in use: a ledger over it books a repeat once.
const ledger = createLedger({ store, capacity: 4 });
await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
const again = await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
assert.equal(again.outcome, 'duplicate');
assert.deepEqual(await ledger.balances('p1'), { coins: 5n });
console.log('a repeat booked once:', again.balances);
