// A bare ledger doing the memory ledger's work on the settlement workload, written by hand for it:
// the floor "the same durable work, nothing general" for bench/ledger.bench.mjs. Per apply it
// checks the entry's shape and sizes, turns the amounts into bigints, admits the signature into
// the owner's FIFO window of 4 (a ring, with the horizon of evicted orders), adds to the owner's
// balances and its scope's totals, appends a journal entry (the newest 100,000 kept, as the
// memory store's default), and answers { outcome, balances, seq } in a resolved promise. What it
// leaves out is what makes a product: typed errors naming the bad field, unknown-key refusal,
// well-formed Unicode checks, meta copies, a capacity change, resolve, reads and a store contract.

import { DEFAULT_JOURNAL_ENTRIES, LIMITS } from '../../dist/index.js';

// The settlement workload's window (DESIGN §3.2: 2 settlements per round x 2 rounds that overlap),
// and the memory store's default journal and size bounds, so the floor checks what the ledger does.
const CAPACITY = 4;
const MAX_JOURNAL = DEFAULT_JOURNAL_ENTRIES;
const MAX_SIGNATURE = LIMITS.signatureBytes;
const MAX_OWNER = LIMITS.ownerBytes;

export class BareLedger {
  #owners = new Map();
  #totals = new Map();
  #journal = [];
  #head = 0;

  apply(entry) {
    const { owner, signature, deltas, scope } = entry;
    if (typeof owner !== 'string' || owner.length === 0 || owner.length > MAX_OWNER)
      return Promise.reject(new TypeError('owner'));
    if (typeof signature !== 'string' || signature.length === 0 || signature.length > MAX_SIGNATURE)
      return Promise.reject(new TypeError('signature'));
    if (scope !== undefined && typeof scope !== 'string') return Promise.reject(new TypeError('scope'));
    const pairs = [];
    for (const field of Object.keys(deltas)) {
      const value = deltas[field];
      if (typeof value !== 'bigint' && !Number.isSafeInteger(value))
        return Promise.reject(new TypeError(field));
      pairs.push([field, BigInt(value)]);
    }
    let state = this.#owners.get(owner);
    if (state === undefined) {
      state = { ring: [], start: 0, balances: new Map(), seq: 0 };
      this.#owners.set(owner, state);
    }
    if (state.ring.includes(signature))
      return Promise.resolve({ outcome: 'duplicate', balances: record(state.balances) });
    if (state.ring.length < CAPACITY) state.ring.push(signature);
    else {
      state.ring[state.start] = signature;
      state.start = (state.start + 1) % CAPACITY;
    }
    for (const [field, amount] of pairs)
      state.balances.set(field, (state.balances.get(field) ?? 0n) + amount);
    if (scope !== undefined) {
      let totals = this.#totals.get(scope);
      if (totals === undefined) this.#totals.set(scope, (totals = new Map()));
      for (const [field, amount] of pairs) totals.set(field, (totals.get(field) ?? 0n) + amount);
    }
    const seq = ++state.seq;
    const one = pairs.length === 1 ? pairs[0] : undefined;
    this.#journal.push({ seq, owner, signature, field: one?.[0], amount: one?.[1], at: Date.now(), scope });
    if (this.#journal.length - this.#head > MAX_JOURNAL) {
      this.#head++;
      if (this.#head * 2 >= this.#journal.length) {
        this.#journal = this.#journal.slice(this.#head);
        this.#head = 0;
      }
    }
    return Promise.resolve({ outcome: 'applied', balances: record(state.balances), seq });
  }
}

function record(map) {
  const out = {};
  for (const [field, value] of map) out[field] = value;
  return out;
}
