/**
 * The SSRF guard: which addresses the local web engine may connect to.
 *
 * An address is public when ipaddr.js classifies it as `unicast`. Every IPv6 form that carries
 * an IPv4 address is checked as the IPv4 address inside: IPv4-mapped (`::ffff:0:0/96`),
 * IPv4-compatible (`::/96`, e.g. `::127.0.0.1`), NAT64 (`64:ff9b::/96` and the local-use
 * `64:ff9b:1::/48`) and 6to4 (`2002::/16`, the IPv4 address in bits 16–47). Everything else (private, loopback, link-local,
 * unique-local, carrier-grade NAT, multicast, unspecified, reserved, 6to4/Teredo tunnels, ...)
 * is refused unless the policy allows it.
 *
 * The guard runs on the addresses a connection actually uses: {@link guardedLookup} is given
 * to `http.request` as its `lookup`, so the address that is checked is the address that is
 * connected to (no DNS-rebinding window between check and connect). Literal IP hosts skip DNS
 * in Node, so {@link checkHost} checks them before the request is made.
 */
import ipaddr from "ipaddr.js"
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns"
import { isIP } from "node:net"

/** Which non-public destinations are allowed. */
export interface Policy {
  /** Allow every private, loopback and link-local address (default false). */
  readonly allowPrivate: boolean
  /**
   * Hosts allowed even when they resolve to a non-public address: host names (`localhost`,
   * `*.internal.test` for subdomains), IP addresses (`127.0.0.1`, `::1`) or CIDR ranges
   * (`10.0.0.0/8`).
   */
  readonly allowHosts: ReadonlyArray<string>
}

/** Why a destination was refused. */
export class Blocked extends Error {
  override readonly name = "Blocked"
  constructor(
    readonly host: string,
    readonly address: string | undefined,
    message: string
  ) {
    super(message)
  }
}

/** Strips the brackets of an IPv6 URL host (`[::1]` → `::1`). */
export const bareHost = (hostname: string): string =>
  hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname

/** The IPv4 address carried by an IPv6 address of a form that embeds one, else undefined. */
export const embeddedIPv4 = (address: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  const p = address.parts // eight 16-bit groups
  const last32 = () => new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff])
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; `::` and `::1` are IPv6's own ranges)
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && (p[5] === 0xffff || p[5] === 0)) {
    if (p[5] === 0 && p[6] === 0 && (p[7] === 0 || p[7] === 1)) return undefined
    return last32()
  }
  // 64:ff9b::/96 (well-known NAT64 prefix) and 64:ff9b:1::/48 (local-use NAT64)
  if (p[0] === 0x64 && p[1] === 0xff9b && (p[2] === 1 || (p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0))) {
    return last32()
  }
  // 2002:AABB:CCDD::/48 (6to4): the IPv4 address is AA.BB.CC.DD
  if (p[0] === 0x2002) return new ipaddr.IPv4([p[1]! >> 8, p[1]! & 0xff, p[2]! >> 8, p[2]! & 0xff])
  return undefined
}

/** An address as it is classified: an IPv6 form carrying an IPv4 address is that IPv4 address. */
const unwrap = (address: string): ipaddr.IPv4 | ipaddr.IPv6 => {
  const parsed = ipaddr.parse(address)
  if (parsed.kind() === "ipv4") return parsed
  return embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed
}

/** The ipaddr.js range name of an address (IPv4 carried in IPv6 unwrapped), or `invalid`. */
export const rangeOf = (address: string): string => {
  if (!ipaddr.isValid(address)) return "invalid"
  return unwrap(address).range()
}

/** Whether an address is a public unicast address. */
export const isPublicAddress = (address: string): boolean => rangeOf(address) === "unicast"

const hostMatches = (entry: string, host: string): boolean => {
  const e = entry.toLowerCase()
  const h = host.toLowerCase()
  if (e.startsWith("*.")) return h.endsWith(e.slice(1))
  return e === h
}

const addressMatches = (entry: string, address: string): boolean => {
  try {
    const addr = unwrap(address)
    if (entry.includes("/")) {
      const [range, bits] = ipaddr.parseCIDR(entry)
      return addr.kind() === range.kind() && addr.match(range, bits)
    }
    if (!ipaddr.isValid(entry)) return false
    const other = unwrap(entry)
    return addr.kind() === other.kind() && addr.toNormalizedString() === other.toNormalizedString()
  } catch {
    return false
  }
}

/** Whether the policy allows connecting to `address` for the URL host `host`. */
export const isAllowed = (policy: Policy, host: string, address: string): boolean => {
  if (isPublicAddress(address)) return true
  if (policy.allowPrivate) return true
  const bare = bareHost(host)
  return policy.allowHosts.some((entry) => hostMatches(entry, bare) || addressMatches(entry, address))
}

const refusal = (host: string, address: string) =>
  new Blocked(
    host,
    address,
    `refused to connect to ${host} (${address}, ${rangeOf(address)} address): private, loopback and ` +
      `link-local destinations are blocked (allow them with allowPrivate or allowHosts)`
  )

/**
 * Checks a URL host that is an IP literal (Node connects to those without a lookup). Host
 * names pass here: their addresses are checked by {@link guardedLookup} at connect time.
 */
export const checkHost = (policy: Policy, hostname: string): Blocked | undefined => {
  const bare = bareHost(hostname)
  if (isIP(bare) === 0) return undefined
  return isAllowed(policy, bare, bare) ? undefined : refusal(bare, bare)
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | Array<LookupAddress>,
  family?: number
) => void

/**
 * A `lookup` for `net.connect`/`http.request` that resolves every address of the host and
 * refuses the connection when any of them is not allowed (a host that mixes public and
 * private answers is a rebinding attempt). Answers in the form Node asked for (`all` or not).
 */
export const guardedLookup = (policy: Policy) =>
(hostname: string, options: LookupOptions, callback: LookupCallback): void => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0)
    const list = addresses as Array<LookupAddress>
    if (list.length === 0) {
      const e: NodeJS.ErrnoException = new Error(`no address for ${hostname}`)
      e.code = "ENOTFOUND"
      return callback(e, "", 0)
    }
    const bad = list.find((a) => !isAllowed(policy, hostname, a.address))
    if (bad) return callback(refusal(hostname, bad.address) as NodeJS.ErrnoException, "", 0)
    if (options.all) return callback(null, list)
    const first = list[0]!
    return callback(null, first.address, first.family)
  })
}

/**
 * Resolves a host name and checks its addresses up front (used to refuse a crawl before it is
 * started). IP literals are checked directly. Resolution failures are not refusals.
 */
export const precheck = (policy: Policy, hostname: string): Promise<Blocked | undefined> => {
  const literal = checkHost(policy, hostname)
  if (literal || isIP(bareHost(hostname)) !== 0) return Promise.resolve(literal)
  return new Promise((resolve) => {
    guardedLookup(policy)(hostname, { all: true }, (err) => {
      resolve(err instanceof Blocked ? err : undefined)
    })
  })
}
