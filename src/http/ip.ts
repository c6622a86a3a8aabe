// The default rate-limit subject of a request: its client address, with an IPv6 address cut to
// its network prefix. One IPv6 client usually holds a whole /64 (often a /56 or /48) and can
// rotate through it at will, so a limit per full address limits nothing; express-rate-limit (v8)
// and @fastify/rate-limit key IPv6 by a /56 for the same reason. No Node builtin: onceflow/hono
// runs where there is none.

/** Bits of an IPv6 address kept by default: a /56, a typical residential delegation. */
export const DEFAULT_IPV6_SUBNET = 56;

/**
 * The subject of `ip`: an IPv4 address (an IPv4-mapped IPv6 one as IPv4) as it is; an IPv6
 * address cut to its first `subnet` bits, written `<prefix>::/<subnet>` (full groups in lower-case
 * hex); `subnet` false (or 128) keeps the whole address. Text that is no address is returned as
 * it is (a framework's own placeholder), never refused.
 */
export function ipSubject(ip: string, subnet: number | false): string {
  if (!ip.includes(':')) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped !== null) return mapped[1] as string;
  if (subnet === false || subnet >= 128) return ip;
  const groups = expand(ip);
  if (groups === undefined) return ip;
  const out: string[] = [];
  let bits = subnet;
  for (const g of groups) {
    if (bits <= 0) break;
    const keep = Math.min(16, bits);
    const mask = keep === 16 ? 0xffff : (0xffff << (16 - keep)) & 0xffff;
    out.push((g & mask).toString(16));
    bits -= keep;
  }
  return `${out.join(':')}::/${subnet}`;
}

/** The 8 groups of an IPv6 address, or undefined when it is not one (a zone id `%eth0` dropped). */
function expand(text: string): number[] | undefined {
  const ip = text.split('%')[0] as string;
  const halves = ip.split('::');
  if (halves.length > 2) return undefined;
  const part = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const head = part(halves[0] as string);
  const tail = halves.length === 2 ? part(halves[1] as string) : [];
  // An embedded IPv4 tail (`::1.2.3.4`) counts as two groups.
  const last = tail.length > 0 ? tail : head;
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(last.at(-1) ?? '');
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    last.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
  }
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 1 && missing !== 0) || missing < 0) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  const groups = all.map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? Number.parseInt(g, 16) : Number.NaN));
  return groups.length === 8 && groups.every((g) => !Number.isNaN(g)) ? groups : undefined;
}
