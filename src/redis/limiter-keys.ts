import { escapeKeyPart } from '../core/key-part.js';
import type { LimitCall } from '../store/limiter.js';
import { specSuffix } from '../windows/limits/algorithms.js';
import type { LimitSpec } from '../windows/limits/types.js';

// Limiter key layout on Redis (after the store's prefix), also the rows of the PostgreSQL store:
//
//   {<ns>:<subject>}:<limit id>:<shape>               every limit of a take counts by one subject
//   {<ns>}:<by>:<subject>:<limit id>:<shape>          limits count by different subjects (`by` given)
//
// <ns> is the namespace's tag (namespaceTag), <shape> the limit's specSuffix. Everything inside
// the braces of one decision is the same, so all keys of one decision share a hash tag: one
// script on one Cluster node, never CROSSSLOT. When limits count by different subjects (per user
// and per IP) the tag is the namespace alone, so the IP's key is the same whichever user it is
// checked with: such a limiter lives on one slot. That is the price of all-or-nothing across
// subjects on a cluster; do not tag by the first subject instead, it would give each user a
// private copy of the IP's counter.
//
// Ids are escaped (escapeKeyPart: %XX for every byte outside [A-Za-z0-9_.-]), so no id can
// contain `:`, `{`, `}` (end a part or a hash tag early) or a glob character (`*`, `?`, `[`, `\`:
// a reset SCANs with MATCH), and two different ids never escape to the same string.

// A namespace used as it is: `|`, a kind, `:` and an escaped id, as the limiter builds them
// (`|l:<name>`, `|t:<tenant>`). It holds no brace or glob character, exactly one `:`, and begins
// with `|`, which no ledger, scope or ordering key's tag does (their ids are escaped by keys.ts's
// escapeId, which escapes `|`): so a reset's SCAN `{<tag>:*` or `{<tag>}*` matches this
// namespace's keys and no other key.
const PLAIN_NAMESPACE = /^\|[A-Za-z0-9_.%-]*:[A-Za-z0-9_.%-]*$/;

/**
 * The hash-tag form of a namespace: a plain one (see PLAIN_NAMESPACE) as it is, any other as
 * `|n:` and its escaped text (no plain namespace begins `|n:`, so the two forms never meet).
 * Injective, and every form has the properties a reset relies on.
 */
export function namespaceTag(namespace: string): string {
  return PLAIN_NAMESPACE.test(namespace) && !namespace.startsWith('|n:')
    ? namespace
    : `|n:${escapeKeyPart(namespace)}`;
}

// Per spec: `:<escaped id>:<shape>`, built once per spec object.
const tails = new WeakMap<LimitSpec, string>();

function tailOf(spec: LimitSpec): string {
  let tail = tails.get(spec);
  if (tail === undefined) {
    tail = `:${escapeKeyPart(spec.id)}:${specSuffix(spec)}`;
    tails.set(spec, tail);
  }
  return tail;
}

/** A call's key (without the store's prefix); `tag` is namespaceTag of the take's namespace. */
export function limiterKey(tag: string, { spec, subject, by }: LimitCall): string {
  return by === undefined
    ? `{${tag}:${escapeKeyPart(subject)}}${tailOf(spec)}`
    : `{${tag}}:${escapeKeyPart(by)}:${escapeKeyPart(subject)}${tailOf(spec)}`;
}
