// Limiter key layout (the same strings in memory and, after the store's prefix, in Redis):
//
//   {<ns>:<subject>}:<limit id>:<shape>               every limit counts by the same subject
//   {<ns>}:<by>:<subject>:<limit id>:<shape>          limits count by different subjects
//
// <ns> is `|l:<limiter name>` or `|t:<tenant>` (a tenant registry); <shape> is algorithm, window
// and parameter (see specSuffix). Everything inside the braces of one decision is the same, so
// all keys of one decision share a hash tag: one script on one Cluster node, never CROSSSLOT.
// When limits count by different subjects (per user and per IP) the tag is the namespace alone,
// so the IP's key is the same whichever user it is checked with: such a limiter lives on one
// slot. That is the price of all-or-nothing across subjects on a cluster; do not tag by the
// first subject instead, it would give each user a private copy of the IP's counter.
//
// The leading `|` keeps limiter keys apart from every other key a store shares a prefix with:
// ledger, scope and ordering keys open their hash tag with an id escaped by the Redis store's
// escapeId, which escapes `|`, so none begins `{|` and a limiter reset (SCAN `{|t:<id>...`) can
// never match one (it did: a ledger named `t` keeps owner `acme` at `{t:acme}:s`).
//
// Ids are escaped with %XX for every byte outside [A-Za-z0-9_.-], so no id can contain `:`,
// `{`, `}` (end a part or a hash tag early) or a glob character (`*`, `?`, `[`, `\`: a reset
// SCANs with MATCH), and two different ids never escape to the same string.

const SAFE = /^[A-Za-z0-9_.-]*$/;

/** Escapes an id (tenant, name, subject, limit id) for use inside a limiter key. Injective. */
export function escapeKeyPart(id: string): string {
  if (SAFE.test(id)) return id;
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 128 && SAFE.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The namespace of a named limiter. */
export function limiterNamespace(name: string): string {
  return `|l:${escapeKeyPart(name)}`;
}

/** The namespace of a tenant: `reset(tenant)` removes exactly the keys in it. */
export function tenantNamespace(tenant: string): string {
  return `|t:${escapeKeyPart(tenant)}`;
}
