import ipaddr from 'ipaddr.js'

/**
 * Which IP addresses a webhook may be sent to (decision 0112). Public means: an IPv4 address in no
 * block of the IANA IPv4 special-purpose registry (RFC 6890 and its updates: "this network",
 * private, CGNAT, loopback, link-local, the IETF protocol block, documentation, benchmarking, 6to4
 * relay, AS112, AMT), nor multicast nor 240.0.0.0/4 (broadcast included); an IPv6 address in the
 * global unicast space 2000::/3 and in no block of the IPv6 special-purpose registry (Teredo,
 * benchmarking, ORCHID, the IETF protocol block, documentation, 6to4, AS112). A block IANA marks
 * "globally reachable" (AS112, AMT, anycast services) is refused all the same: no webhook receiver
 * lives there. Everything outside 2000::/3 is refused (loopback, unspecified, unique-local,
 * link-local, multicast, discard, IPv4-compatible ::/96, the IETF's unassigned space), except two
 * forms that carry an IPv4 address and reach it: IPv4-mapped (::ffff:0:0/96) and the well-known
 * NAT64 prefix (64:ff9b::/96, what DNS64 answers on an IPv6-only network); those are judged by the
 * IPv4 address they carry. 6to4 (2002::/16) and Teredo (2001::/32) are refused whole, whatever they
 * embed. The ranges are ipaddr.js's (`range()`); test/webhooks/outbound.test.ts checks the verdict
 * against a table of its own written from the registries.
 */

/** Cloud metadata services: refused even for a local receiver (`local` below). */
const METADATA = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OCI, DigitalOcean… instance metadata
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.170.23', // AWS EKS pod identity
  '100.100.100.200', // Alibaba Cloud metadata
  'fd00:ec2::254', // AWS instance metadata over IPv6
  'fd00:ec2::23', // AWS EKS pod identity over IPv6
])

/** The classes a local receiver may use (`allowHttp` and `allowPrivate`: tests, a receiver on this machine or network). */
const LOCAL_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'linkLocal', 'carrierGradeNat'])

/** What each of ipaddr.js's range names is, in words. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified ("this network") address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (CGNAT) address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
  as112: 'an AS112 (DNS sink) address',
  as112v6: 'an AS112 (DNS sink) address',
  amt: 'an AMT relay address',
  teredo: 'a Teredo address',
  '6to4': 'a 6to4 address',
  rfc6052: 'a local-use NAT64 address',
  rfc6145: 'an IPv4-translated address',
  discard: 'a discard-only address',
  deprecatedSiteLocal: 'a site-local address',
  segmentRouting: 'a segment-routing address',
}

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3')
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96')

/** An address's range name, whether it is a metadata service, and the IPv4 address it carries, if judged by it. */
type Judged = { range: string; metadata: boolean; carried?: string }

/** The range of an IPv4 address, and whether it is a metadata service. */
const judgeIPv4 = (address: ipaddr.IPv4): Judged => ({ range: address.range(), metadata: METADATA.has(address.toString()) })

/** The IPv4 address in the last 32 bits of an IPv6 address. */
const lastIPv4 = ([, , , , , , high = 0, low = 0]: number[]) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/** The range of an IPv6 address, an embedded IPv4 address judged as IPv4; `outside` for unicast outside 2000::/3. */
function judgeIPv6(address: ipaddr.IPv6): Judged {
  if (address.isIPv4MappedAddress() || address.match(NAT64)) {
    const carried = lastIPv4(address.parts)
    return { ...judgeIPv4(carried), carried: carried.toString() }
  }
  const range = address.range()
  const metadata = METADATA.has(address.toString())
  if (range === 'unicast' && !address.match(GLOBAL_UNICAST)) return { range: 'outside', metadata }
  return { range, metadata }
}

const DOTTED_TAIL = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/

/**
 * IPv6 text with a dotted IPv4 tail (`::8.8.8.8`, as glibc writes an IPv4-compatible address) in hex
 * groups. ipaddr.js reads `::a.b.c.d` as the IPv4-mapped `::ffff:a.b.c.d`; RFC 4291 says it is
 * `::a.b.c.d`, IPv4-compatible, outside 2000::/3.
 */
function hexTail(text: string): string | null {
  const match = DOTTED_TAIL.exec(text)
  if (!match) return text
  const [head, ...octets] = match.slice(1) as [string, string, string, string, string]
  if (!ipaddr.IPv4.isValidFourPartDecimal(octets.join('.'))) return null
  const [a, b, c, d] = octets.map(Number) as [number, number, number, number]
  return `${head}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
}

/** An address as text (dotted decimal, or IPv6 without brackets), parsed; null for anything else. */
function parsed(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text)
  const hex = text.includes('%') ? null : hexTail(text)
  return hex !== null && ipaddr.IPv6.isValid(hex) ? ipaddr.IPv6.parse(hex) : null
}

/**
 * Why a webhook may not be sent to `text` ("a loopback address", "a private address", "a cloud
 * metadata address"…), or null when it may: a public address, or with `local` (a receiver on this
 * machine or network, never in production) loopback, private, unique-local, link-local or CGNAT too.
 * Metadata services, unspecified, multicast, broadcast and reserved addresses are refused always.
 */
export function addressRefusal(text: string, local: boolean): string | null {
  const address = parsed(text)
  if (!address) return 'not an IP address'
  const { range, metadata, carried } = address.kind() === 'ipv4' ? judgeIPv4(address as ipaddr.IPv4) : judgeIPv6(address as ipaddr.IPv6)
  const form = carried === undefined ? '' : ` (IPv4 ${carried} in IPv6 form)`
  if (metadata) return `a cloud metadata address${form}`
  if (range === 'unicast') return null
  if (local && LOCAL_RANGES.has(range)) return null
  if (range === 'outside') return 'a reserved IPv6 address (outside the global unicast space 2000::/3)'
  return `${RANGE_WORDS[range] ?? 'a special-purpose address'}${form}`
}

/** Whether `text` is an IP address a webhook may be sent to in production. */
export const isPublicAddress = (text: string): boolean => addressRefusal(text, false) === null
