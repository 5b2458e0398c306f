import ipaddr from 'ipaddr.js'
import { type FieldError, fail } from '../shared/errors.ts'
import { addressRefusal } from './addresses.ts'

/** How far the guard trusts a target. Production sets `allowHttp: false` and never `allowPrivate`. */
export type TargetOptions = {
  /** Plain http allowed: for local use only (tests, a receiver on this machine). */
  allowHttp: boolean
  /**
   * Loopback, private, unique-local, link-local and CGNAT addresses allowed, and local names
   * (localhost, *.local, …): only together with `allowHttp`, for tests and a local receiver. Cloud
   * metadata, unspecified, multicast and reserved addresses stay refused.
   */
  allowPrivate?: boolean
}

export const MAX_URL_LENGTH = 2048

/** Names that lead to this machine or a private network, refused before any lookup. */
const LOCAL_NAMES = [/^localhost$/, /\.localhost$/, /\.local$/, /\.internal$/, /\.localdomain$/, /(^|\.)home\.arpa$/]

/** Whitespace and control characters, which the URL parser drops or trims silently. */
const INVISIBLE = /[\s\u0000-\u001f\u007f]/

/** Whether the options allow a local receiver: both flags, never in production. */
export const isLocal = (options: TargetOptions): boolean => options.allowHttp && options.allowPrivate === true

/** The URL, parsed, or null when it is not an absolute URL. */
function parsedUrl(text: string): URL | null {
  try {
    return new URL(text)
  } catch {
    return null
  }
}

/**
 * The IP address a URL's host names literally (dotted decimal as the URL parser writes it, even
 * for `0x7f.1` or `2130706433`; IPv6 without its brackets), or null for a host name.
 */
export function literalAddress(hostname: string): string | null {
  if (hostname.startsWith('[') && hostname.endsWith(']')) return hostname.slice(1, -1)
  return ipaddr.IPv4.isValidFourPartDecimal(hostname) ? hostname : null
}

/** Why the host may not receive webhooks, or null: an IP literal is judged now, a name at each delivery. */
function hostProblem(hostname: string, local: boolean): string | null {
  const literal = literalAddress(hostname)
  if (literal !== null) {
    const refusal = addressRefusal(literal, local)
    return refusal && `Expected a public address: ${literal} is ${refusal}`
  }
  if (local) return null
  const name = hostname.replace(/\.$/, '')
  if (LOCAL_NAMES.some((pattern) => pattern.test(name))) return `Expected a public host name: ${hostname} names this machine or a private network`
  if (!name.includes('.')) return `Expected a fully qualified host name, e.g. hooks.example.com: ${hostname} would be resolved in a local domain`
  return null
}

/** Why `text` may not be a webhook's URL (a message starting "Expected …"), or null when it may. */
export function targetProblem(text: string, options: TargetOptions): string | null {
  if (text.length > MAX_URL_LENGTH) return `Expected a URL of at most ${MAX_URL_LENGTH} characters (this one has ${text.length})`
  if (INVISIBLE.test(text)) return 'Expected a URL without spaces or control characters'
  const url = parsedUrl(text)
  if (!url) return 'Expected an absolute URL, e.g. https://hooks.example.com/mirador'
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `Expected an https URL, not ${url.protocol}`
  if (url.protocol === 'http:' && !options.allowHttp) return 'Expected an https URL: plain http is allowed only for a local receiver'
  if (url.username || url.password) return 'Expected a URL without a user name or password (user:password@)'
  if (!url.hostname) return 'Expected a host, e.g. https://hooks.example.com/mirador'
  if (url.port === '0') return 'Expected a port from 1 to 65535'
  return hostProblem(url.hostname, isLocal(options))
}

/**
 * The check of a webhook's URL as written, at subscription: none, or one error on the field `url`.
 * A host name is only checked for the names that are local by definition here; what it resolves to
 * is checked at each delivery (`deliver`), since it can change.
 */
export function checkTarget(url: string, options: TargetOptions): FieldError[] {
  const problem = targetProblem(url, options)
  return problem === null ? [] : [{ field: 'url', message: problem }]
}

/** `checkTarget` as a refusal: throws the invalid_request the API answers, with its one field error. */
export function assertTarget(url: string, options: TargetOptions): void {
  const problems = checkTarget(url, options)
  if (problems.length > 0) throw fail.invalidRequest('the webhook URL is not one Mirador may send to', problems)
}
