// A list of IP addresses and CIDR blocks (10.1.0.0/16, 2001:db8::/32, 192.0.2.7), checked with
// Node's native BlockList: what routes match a sender against, and which peers a listener
// trusts to speak the PROXY protocol.

import { BlockList, isIP } from 'node:net';

export interface AddressList {
  /** Is `address` (IPv4, IPv6, or IPv4-mapped IPv6 as "::ffff:a.b.c.d") in the list? */
  has(address: string): boolean;
}

/** The list of `entries`; those that are no address or CIDR are returned in `bad`. */
export function addressList(entries: readonly string[]): { list: AddressList; bad: string[] } {
  const list = new BlockList();
  const bad: string[] = [];
  for (const s of entries) {
    const [addr, bits, extra] = s.split('/');
    const family = isIP(addr as string);
    const max = family === 6 ? 128 : 32;
    const prefix = bits === undefined ? max : /^[0-9]{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
      bad.push(s);
      continue;
    }
    list.addSubnet(addr as string, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return {
    list: {
      has(address) {
        const a = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
        const family = isIP(a);
        return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4');
      },
    },
    bad,
  };
}
