// Outbound-webhook URL safety (SPEC §6): https only, no credentials, ≤ 2048 chars, and every
// address the host resolves to must be public unicast. Classification is ipaddr.js's range
// table, after unwrapping IPv6 forms that embed IPv4, plus what it misses (see EXTRA_BLOCKED).
// Pure but for the resolver, which the caller passes in (tests inject one; no real DNS).
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export const MAX_URL_LENGTH = 2048;

/** Resolves a host name to every address it has (A and AAAA), as text. */
export type Resolver = (hostname: string) => Promise<string[]>;

/** A URL or address the webhook rules refuse. `message` is a sentence for people naming `url`. */
export class UnsafeUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** How ipaddr.js's range names read in an error message. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'shared address space (CGNAT)',
  private: 'private',
  reserved: 'reserved',
  as112: 'reserved (AS112)',
  amt: 'reserved (AMT)',
  uniqueLocal: 'private (unique local)',
  deprecatedSiteLocal: 'site-local',
  discard: 'reserved (discard prefix)',
  rfc6145: 'reserved (IPv4-translated)',
  teredo: 'reserved (Teredo)',
  benchmarking: 'reserved (benchmarking)',
  as112v6: 'reserved (AS112)',
  deprecatedOrchid: 'reserved (ORCHID)',
  orchid2: 'reserved (ORCHID)',
  droneRemoteIdProtocolEntityTags: 'reserved (DRIP)',
  segmentRouting: 'reserved (segment routing)',
};

/**
 * Addresses ipaddr.js calls `unicast` that must never be a webhook target: cloud metadata
 * and host services reachable from inside a VM (Azure's wireserver 168.63.129.16, Alibaba's
 * 100.100.100.200, AWS's IPv6 instance metadata). Some also fall in ranges blocked anyway;
 * listing them keeps the reason explicit if a range ever changes.
 */
const EXTRA_BLOCKED: readonly [string, string][] = [
  ['168.63.129.16/32', 'a cloud metadata address'],
  ['100.100.100.200/32', 'a cloud metadata address'],
  ['169.254.169.254/32', 'a cloud metadata address'],
  ['fd00:ec2::254/128', 'a cloud metadata address'],
];
const EXTRA_BLOCKED_PARSED = EXTRA_BLOCKED.map(([cidr, why]) => [ipaddr.parseCIDR(cidr), why] as const);

/** The whole global unicast space of IPv6 today; anything outside it is not a destination. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

function inRange(address: Address, range: [Address, number]): boolean {
  return address.kind() === range[0].kind() && address.match(range);
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it; else undefined. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const fromWords = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  if (address.isIPv4MappedAddress()) return address.toIPv4Address(); // ::ffff:a.b.c.d
  const range = address.range();
  if (range === 'rfc6052' && p[2] === 0) return fromWords(p[6]!, p[7]!); // NAT64 64:ff9b::/96
  if (range === '6to4') return fromWords(p[1]!, p[2]!); // 2002:AABB:CCDD::/48
  return undefined;
}

/** Parses any textual IP form ipaddr.js knows (dotted, decimal, hex, octal, short, IPv6). */
export function parseAddress(text: string): Address | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  try {
    return ipaddr.parse(bare);
  } catch {
    return undefined;
  }
}

/**
 * Why `address` is not a public unicast address, or undefined when it is one. IPv6 forms
 * that embed IPv4 (mapped, NAT64, 6to4) are judged by the IPv4 address they carry; the
 * deprecated IPv4-compatible form `::a.b.c.d`, which ipaddr.js calls unicast, is refused.
 */
export function nonPublicReason(address: Address): string | undefined {
  for (const [range, why] of EXTRA_BLOCKED_PARSED) {
    if (inRange(address, range)) return why;
  }
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return range === 'unicast' ? undefined : (RANGE_WORDS[range] ?? range);
  }
  const v6 = address as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    const why = nonPublicReason(embedded);
    return why === undefined ? undefined : `${why} (embeds ${embedded.toString()})`;
  }
  const range = v6.range();
  if (range === 'rfc6052') return 'reserved (NAT64 local-use prefix)';
  if (range !== 'unicast') return RANGE_WORDS[range] ?? range;
  if (v6.parts.slice(0, 6).every((part) => part === 0)) return 'IPv4-compatible (deprecated)';
  if (!inRange(v6, GLOBAL_UNICAST_V6)) return 'outside global unicast space';
  return undefined;
}

/** The CIDRs of WEBHOOK_ALLOW_PRIVATE_CIDRS, the only way around the public-address rule. */
export class AllowedCidrs {
  readonly #ranges: [Address, number][];

  /** `cidrs` as config.webhookAllowPrivateCidrs holds them (validated at start). */
  constructor(cidrs: readonly string[]) {
    this.#ranges = cidrs.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** True when `address`, or the IPv4 address it embeds, is inside one of the CIDRs. */
  covers(address: Address): boolean {
    const forms: Address[] = [address];
    if (address.kind() === 'ipv6') {
      const embedded = embeddedIPv4(address as ipaddr.IPv6);
      if (embedded) forms.push(embedded);
    }
    return forms.some((form) => this.#ranges.some((range) => inRange(form, range)));
  }
}

/** A webhook URL that passed the checks that need no DNS. */
export interface ParsedWebhookUrl {
  url: URL;
  /** Host without IPv6 brackets or a trailing dot. */
  host: string;
  /** The address when the host is an IP literal (any IPv4 spelling is normalised by then). */
  literal: Address | undefined;
}

/**
 * Checks the parts of a webhook URL that need no DNS: absolute, http(s), no credentials,
 * ≤ 2048 chars, not `localhost`. WHATWG parsing already turns every IPv4 spelling
 * (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, percent-encoded, full-width) into dotted
 * decimal. Throws UnsafeUrlError. Whether `http:` is allowed is decided with the addresses.
 */
export function parseWebhookUrl(text: string): ParsedWebhookUrl {
  if (text.length > MAX_URL_LENGTH) {
    throw new UnsafeUrlError(`url must be at most ${MAX_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UnsafeUrlError('url must be an absolute https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UnsafeUrlError('url must use https');
  if (url.username !== '' || url.password !== '') {
    throw new UnsafeUrlError('url must not contain credentials');
  }
  let host = url.hostname;
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '') throw new UnsafeUrlError('url must be an absolute https URL');
  const lower = host.toLowerCase();
  if (lower === 'localhost' || lower.endsWith('.localhost')) {
    throw new UnsafeUrlError('url must not point to localhost');
  }
  const literal = isIP(host) !== 0 || ipaddr.isValid(host) ? parseAddress(host) : undefined;
  return { url, host, literal };
}

/**
 * The addresses to connect to for `host`, every one of them vetted: public unicast, or
 * inside `allowed`; with `http:` every one must be inside `allowed` (SPEC §1). IP literals
 * are vetted as they are, names through `resolve` (a name with no address is refused).
 * Throws UnsafeUrlError naming the first offending address.
 */
export async function vetHost(
  host: string,
  protocol: string,
  resolve: Resolver,
  allowed: AllowedCidrs,
): Promise<string[]> {
  const literal = isIP(host) !== 0 || ipaddr.isValid(host) ? parseAddress(host) : undefined;
  let texts: string[];
  if (literal) texts = [literal.toString()];
  else {
    try {
      texts = await resolve(host);
    } catch {
      throw new UnsafeUrlError(`url host ${host} could not be resolved`);
    }
    if (texts.length === 0) throw new UnsafeUrlError(`url host ${host} could not be resolved`);
  }
  for (const text of texts) {
    const address = parseAddress(text);
    if (!address) throw new UnsafeUrlError(`url host ${host} resolved to an invalid address`);
    if (allowed.covers(address)) continue;
    const why = nonPublicReason(address);
    if (why !== undefined) {
      throw new UnsafeUrlError(`url must resolve to public addresses only (${text} is ${why})`);
    }
    if (protocol !== 'https:') throw new UnsafeUrlError('url must use https');
  }
  return texts;
}

/**
 * The whole check for a webhook URL given by a client (create, update): parse, then resolve
 * and vet every address. Returns the normalised URL text. Throws UnsafeUrlError.
 */
export async function checkWebhookUrl(text: string, resolve: Resolver, allowed: AllowedCidrs): Promise<string> {
  const { url, host } = parseWebhookUrl(text);
  await vetHost(host, url.protocol, resolve, allowed);
  return url.toString();
}
