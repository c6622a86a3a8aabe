import { escapeKeyPart } from '../core/key-part.js';

// A limiter's namespace: the key space its states live in, handed to the store with every take
// (stores build their own keys from it, the subject and the limit). `|l:<name>` for a named
// limiter, `|t:<tenant>` for a tenant of a registry, the id %-escaped: so a name and a tenant
// never share a namespace, no two names do, and no name can reach into another's (an id like
// `a:b`, `{x}` or `*` stays inside its own). The leading `|` is no escaped id's first character,
// so a store that keeps other keys beside limiter states can tell them apart.

/** The namespace of a named limiter. */
export function limiterNamespace(name: string): string {
  return `|l:${escapeKeyPart(name)}`;
}

/** The namespace of a tenant: `reset(tenant)` removes exactly the states in it. */
export function tenantNamespace(tenant: string): string {
  return `|t:${escapeKeyPart(tenant)}`;
}
