import { describe, expect, it } from 'vitest';
import { ipSubject } from './ip.js';

describe('ipSubject', () => {
  it('keeps IPv4 (and IPv4-mapped IPv6) whole, and cuts IPv6 to its network', () => {
    expect(ipSubject('203.0.113.7', 56)).toBe('203.0.113.7');
    expect(ipSubject('::ffff:203.0.113.7', 56)).toBe('203.0.113.7');
    expect(ipSubject('2001:db8:abcd:12ff:1:2:3:4', 56)).toBe('2001:db8:abcd:1200::/56');
    expect(ipSubject('2001:db8:abcd:12ff::9', 64)).toBe('2001:db8:abcd:12ff::/64');
    expect(ipSubject('2001:db8::1', 48)).toBe('2001:db8:0::/48');
    expect(ipSubject('fe80::1%eth0', 56)).toBe('fe80:0:0:0::/56');
    expect(ipSubject('::', 56)).toBe('0:0:0:0::/56');
    expect(ipSubject('2001:db8::1', false)).toBe('2001:db8::1');
    expect(ipSubject('2001:db8::1', 128)).toBe('2001:db8::1');
  });

  it('gives two addresses of one /56 one subject, of two /56s two', () => {
    const a = ipSubject('2001:db8:1:100::1', 56);
    expect(ipSubject('2001:db8:1:1ff:ffff:ffff:ffff:ffff', 56)).toBe(a);
    expect(ipSubject('2001:db8:1:200::1', 56)).not.toBe(a);
  });

  it('returns what is not an address as it is', () => {
    for (const text of ['unknown', '1:2:3', 'a::b::c', '2001:db8::zz', '1.2.3.4.5'])
      expect(ipSubject(text, 56)).toBe(text);
  });
});
