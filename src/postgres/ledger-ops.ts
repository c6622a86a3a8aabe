// The ledger part of the Postgres store: every operation is one statement calling a function of
// the store's schema (sql/001-ledger.sql), so an apply is one round trip and one transaction, or
// one step of the caller's transaction through `inTransaction`. What SQL can get wrong is checked
// here first: the command as the Redis store checks it (checkApplyCommand), then what PostgreSQL
// cannot hold (U+0000 in text, a numeric past its digits).
import { createHash } from 'node:crypto';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import { setOwn } from '../core/own-record.js';
import {
  isPlainObject,
  knownKeys,
  nonEmptyStringArg,
  nonNegativeInt,
  orderFromString,
  orderToString,
} from '../core/validate.js';
import { checkApplyCommand } from '../store/apply-command.js';
import type {
  Balances,
  JournalEntry,
  JournalQuery,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  WindowState,
} from '../store/store.js';
import type { PgContext } from './context.js';
import type { PgCleanup, PgLedgerOps } from './ops.js';
import type { PgQueryConfig } from './pg-like.js';

/** The ledger's options of createPostgresStore. */
export interface PgLedgerOptions {
  /**
   * Journal retention **per owner**, as on Redis: `maxEntriesPerOwner` keeps the newest n
   * entries of each owner's journal, 0 keeps none. Default (or `Infinity`): keep every entry.
   * Balances, windows and scope totals never depend on it. Each apply drops its owner's entry
   * that falls past the limit in the same statement; what retention dropped is remembered per
   * owner, so `ledger.resolve` answers `unknown` at or below the dropped orders instead of
   * booking twice. `ledger.resolve` of an entry the window does not hold reads the owner's
   * retained journal, so the limit also bounds what such a resolve costs. A limit lowered later
   * is caught up a few rows per apply, and by `store.cleanup()` for owners that no longer apply.
   * (The memory store's `maxEntries` bounds a whole ledger; here it would need a ledger-wide count
   * every apply of every owner locks, so it is refused by name.)
   */
  journal?: { maxEntriesPerOwner?: number };
}

/** The checked ledger options: the retention per owner (`Infinity`: every entry kept). */
export interface CheckedLedgerOptions {
  readonly maxEntriesPerOwner: number;
}

/** Validates the `journal` option of createPostgresStore (see {@link PgLedgerOptions.journal}). */
export function checkLedgerOptions(options: PgLedgerOptions): CheckedLedgerOptions {
  const { journal } = options;
  if (journal === undefined) return { maxEntriesPerOwner: Number.POSITIVE_INFINITY };
  if (!isPlainObject(journal)) {
    throw new InvalidOptionError('journal', 'an object like { maxEntriesPerOwner: 1000 }', journal);
  }
  if ((journal as { maxEntries?: unknown }).maxEntries !== undefined) {
    throw new InvalidOptionError(
      'journal.maxEntries',
      'absent on PostgreSQL: retention there is per owner, `journal.maxEntriesPerOwner`',
      (journal as { maxEntries?: unknown }).maxEntries,
    );
  }
  knownKeys('journal', journal, ['maxEntriesPerOwner']);
  const max = journal.maxEntriesPerOwner;
  if (max === undefined || max === Number.POSITIVE_INFINITY) {
    return { maxEntriesPerOwner: Number.POSITIVE_INFINITY };
  }
  return { maxEntriesPerOwner: nonNegativeInt('journal.maxEntriesPerOwner', max) };
}

// PostgreSQL's numeric holds at most 131 072 digits before the decimal point; an amount or an
// order with more would fail inside the statement (a StoreError for what is the caller's input),
// so it is refused here, by name. No balance of minor units comes near it.
const NUMERIC_DIGITS = 131_072;

// Owners one cleanup call may walk, per journal row it may delete: most owners have nothing past
// the retention (applies trim their own), so a call reads a stretch of the owner table's key
// order much longer than what it deletes. At the default limit (1000 rows) that is 10 000 owners,
// ~3-25 ms on a loaded 2-core machine (node scripts/pg-ledger-cost.mjs cleanup), and a million
// owners are walked in 100 calls.
const CLEANUP_SCAN_PER_ROW = 10;

/** The ledger operations of the Store contract on PostgreSQL (see sql/001-ledger.sql). */
export function postgresLedgerOps(ctx: PgContext, options: CheckedLedgerOptions): PgLedgerOps {
  const keep = Number.isFinite(options.maxEntriesPerOwner) ? String(options.maxEntriesPerOwner) : null;
  // One statement text per operation, prepared once per connection under a name derived from
  // the text (a name is cut at 63 bytes by PostgreSQL: a long schema in the name could make two
  // statements meet).
  const applyText = `SELECT outcome, seq, balances FROM ${ctx.schema}.ledger_apply($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`;
  const applyName = statementName('ledger-apply', applyText);
  const balancesText = `SELECT ${ctx.schema}.ledger_balances($1, $2) AS balances`;
  const windowText = `SELECT sigs, horizon FROM ${ctx.schema}.ledger_window($1, $2)`;
  const totalsText = `SELECT ${ctx.schema}.ledger_scope_totals($1, $2) AS totals`;
  const journalText = `SELECT seq, owner, signature, scope, ord, deltas, meta, at FROM ${ctx.schema}.ledger_journal($1, $2, $3, $4, $5)`;
  const named = (label: string, text: string) => {
    const name = statementName(label, text);
    return (values: unknown[]): PgQueryConfig => ({ text, values, name });
  };
  const balancesQuery = named('ledger-balances', balancesText);
  const windowQuery = named('ledger-window', windowText);
  const totalsQuery = named('ledger-totals', totalsText);
  const journalQuery = named('ledger-journal', journalText);

  async function write(
    operation: 'ledgerApply' | 'ledgerResolve',
    cmd: LedgerApplyCommand,
  ): Promise<Record<string, unknown>> {
    const values = commandValues(operation, cmd, keep);
    const rows = await ctx.query(operation, 'write', { text: applyText, values, name: applyName });
    return rows[0] as Record<string, unknown>;
  }

  return {
    ledgerApply: async (cmd) => resultOf<LedgerApplyResult>(await write('ledgerApply', cmd)),
    ledgerResolve: async (cmd) => resultOf<LedgerResolveResult>(await write('ledgerResolve', cmd)),
    ledgerBalances: async (ledger, owner) => {
      const values = [nameArg('ledger', ledger), ownerArg('owner', owner)];
      const rows = await ctx.query('ledgerBalances', 'read', balancesQuery(values));
      return balancesOf(rows[0]?.['balances']);
    },
    ledgerWindow: async (ledger, owner): Promise<WindowState> => {
      const values = [nameArg('ledger', ledger), ownerArg('owner', owner)];
      const row = (await ctx.query('ledgerWindow', 'read', windowQuery(values)))[0];
      if (row === undefined) return { signatures: [] };
      const signatures = JSON.parse(row['sigs'] as string) as string[];
      const horizon = row['horizon'];
      return typeof horizon === 'string' ? { signatures, horizon: orderFromString(horizon) } : { signatures };
    },
    ledgerJournal: async (ledger, query) => {
      const values = journalValues(nameArg('ledger', ledger), query);
      if (values === undefined) return [];
      const rows = await ctx.query('ledgerJournal', 'read', journalQuery(values));
      return rows.map(journalEntry);
    },
    ledgerScopeTotals: async (ledger, scope) => {
      const values = [nameArg('ledger', ledger), scopeArg('scope', scope)];
      const rows = await ctx.query('ledgerScopeTotals', 'read', totalsQuery(values));
      return balancesOf(rows[0]?.['totals']);
    },
  };
}

/**
 * The journal's clean-up: deletes at most `limit` journal rows past the retention, oldest first
 * per owner. Applies drop their own owner's rows past the limit as they book, so rows past it
 * are only those of owners that have not applied since the limit was lowered; with every entry
 * kept there are none, and no statement is sent.
 */
export function ledgerCleanup(ctx: PgContext, options: CheckedLedgerOptions): PgCleanup {
  const text = `SELECT ${ctx.schema}.ledger_cleanup($1, $2, $3) AS deleted`;
  const name = statementName('ledger-cleanup', text);
  return async (limit) => {
    if (!Number.isFinite(options.maxEntriesPerOwner)) return 0;
    const values = [String(options.maxEntriesPerOwner), String(limit), String(limit * CLEANUP_SCAN_PER_ROW)];
    const rows = await ctx.query('cleanup', 'write', { text, values, name });
    return Number(rows[0]?.['deleted'] ?? 0);
  };
}

/** A prepared statement's name: unique per text, well under PostgreSQL's 63 bytes. */
function statementName(label: string, text: string): string {
  return `onceflow:${label}:${createHash('sha256').update(text).digest('base64url').slice(0, 16)}`;
}

/**
 * The parameters of ledger_apply for a command, checked as the Redis store checks it, plus what
 * PostgreSQL cannot hold; an error before any SQL otherwise (a malformed command is the caller's
 * InvalidArgumentError, anything else thrown while reading it a StoreError: nothing was sent).
 */
function commandValues(
  operation: 'ledgerApply' | 'ledgerResolve',
  cmd: LedgerApplyCommand,
  keep: string | null,
): unknown[] {
  try {
    const meta = checkApplyCommand(cmd);
    withinLimit('ledger', cmd.ledger, 'nameBytes');
    noNul('ledger', cmd.ledger);
    noNul('owner', cmd.owner);
    noNul('signature', cmd.signature);
    if (cmd.scope !== undefined) noNul('scope', cmd.scope);
    const fields: string[] = [];
    const amounts: string[] = [];
    for (const [field, amount] of cmd.deltas) {
      noNul('deltas', field);
      fields.push(field);
      amounts.push(numericText(`deltas.${field}`, amount));
    }
    return [
      operation === 'ledgerResolve',
      cmd.ledger,
      cmd.owner,
      cmd.signature,
      String(cmd.capacity),
      cmd.horizon,
      cmd.scope ?? null,
      cmd.order === undefined ? null : numericText('order', orderToString(cmd.order)),
      fields,
      amounts,
      meta ?? null,
      keep,
    ];
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw err;
    throw new StoreError(operation, err, { outcome: 'not-applied', retriable: false });
  }
}

/** The journal function's parameters, or `undefined` when the query asks for nothing (limit 0). */
function journalValues(ledger: string, query: JournalQuery): unknown[] | undefined {
  if (!isPlainObject(query)) throw new InvalidArgumentError('query', 'an object', query);
  const owner = query.owner === undefined ? null : ownerArg('query.owner', query.owner);
  const scope = query.scope === undefined ? null : scopeArg('query.scope', query.scope);
  const count = (key: 'after' | 'limit') => {
    const v = query[key];
    if (v === undefined) return null;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new InvalidArgumentError(`query.${key}`, 'a non-negative safe integer', v);
    }
    return String(v);
  };
  const after = count('after');
  const limit = count('limit');
  if (limit === '0') return undefined;
  return [ledger, owner, scope, after, limit];
}

function journalEntry(row: Record<string, unknown>): JournalEntry {
  const entry: { -readonly [K in keyof JournalEntry]: JournalEntry[K] } = {
    seq: Number(row['seq']),
    owner: row['owner'] as string,
    signature: row['signature'] as string,
    deltas: balancesOf(row['deltas']),
    at: Number(row['at']),
  };
  if (typeof row['scope'] === 'string') entry.scope = row['scope'];
  if (typeof row['ord'] === 'string') entry.order = orderFromString(row['ord']);
  if (typeof row['meta'] === 'string') entry.meta = JSON.parse(row['meta']);
  return entry;
}

/**
 * Balances from their JSON text (field -> decimal string; NULL or absent: none), as own data
 * properties whatever the field names (JSON.parse makes `__proto__` an own key too, see setOwn).
 */
// A ledger_apply or ledger_resolve row as the contract's reply: the two functions answer the same
// columns, and only an applied event has a journal seq.
function resultOf<R extends LedgerApplyResult | LedgerResolveResult>(row: Record<string, unknown>): R {
  const balances = balancesOf(row['balances']);
  const outcome = row['outcome'] as R['outcome'];
  return (
    outcome === 'applied' ? { outcome, balances, seq: Number(row['seq']) } : { outcome, balances }
  ) as R;
}

function balancesOf(json: unknown): Balances {
  const balances: Balances = {};
  if (typeof json !== 'string') return balances;
  const amounts = JSON.parse(json) as Record<string, string>;
  for (const field of Object.keys(amounts)) setOwn(balances, field, BigInt(amounts[field] as string));
  return balances;
}

/**
 * PostgreSQL `text` cannot hold U+0000 (the server refuses it): a string with one is refused
 * here, by name, rather than failing inside the statement. Lone surrogates are refused upstream
 * (nonEmptyStringArg), so every other string is stored as it is.
 */
function noNul(path: string, value: string): void {
  if (value.includes('\u0000')) {
    throw new InvalidArgumentError(
      path,
      'a string without U+0000 (PostgreSQL text cannot hold U+0000)',
      value,
    );
  }
}

/** An amount's or an order's decimal text, within what `numeric` holds (NUMERIC_DIGITS). */
function numericText(path: string, value: bigint | string): string {
  const text = typeof value === 'bigint' ? value.toString() : value;
  if (text.length > NUMERIC_DIGITS && text.replace('-', '').length > NUMERIC_DIGITS) {
    throw new InvalidArgumentError(
      path,
      `an integer of at most ${NUMERIC_DIGITS} digits (PostgreSQL numeric)`,
      value,
    );
  }
  return text;
}

function nameArg(path: string, value: unknown): string {
  const name = withinLimit(path, nonEmptyStringArg(path, value), 'nameBytes');
  noNul(path, name);
  return name;
}

function ownerArg(path: string, value: unknown): string {
  const owner = withinLimit(path, nonEmptyStringArg(path, value), 'ownerBytes');
  noNul(path, owner);
  return owner;
}

function scopeArg(path: string, value: unknown): string {
  const scope = withinLimit(path, nonEmptyStringArg(path, value), 'scopeBytes');
  noNul(path, scope);
  return scope;
}
