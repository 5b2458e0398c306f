import { type Static, type TObject, type TSchema, Type } from '@sinclair/typebox'
import type { FieldError } from '../shared/errors.ts'
import { foldCase, inputErrors, invalidInput, type Parsed } from '../shared/input-schema.ts'
import { checker } from '../shared/validate.ts'

/**
 * The one reader of a route's path and query parameters: their TypeBox schemas (also what the
 * OpenAPI document shows and where their TypeScript types come from) applied to the raw request.
 *
 * 1. The query string is the part of `request.url` after the first `?` (up to a `#`), split on `&`,
 *    each pair on its first `=`, `+` read as a space, then percent-decoded. A documented parameter
 *    given more than once is refused; other parameters are ignored.
 * 2. Text becomes the schema's type by one rule: an integer is decimal digits without sign or
 *    leading zeros (`0`, `7`, `200`); a number (an amount) is the same, optionally with a fraction
 *    (`150000`, `1999.99`). Anything else stays text and fails the check.
 * 3. Case folding, defaults and the check (shared/input-schema.ts); `refine` then checks what
 *    depends on several parameters (e.g. price_min ≤ price_max), given only those that passed.
 * 4. Every bad parameter is named at once in a 400 `invalid_request`, in the schemas' order.
 */

export type InputSchemas<P extends TObject = TObject<{}>, Q extends TObject = TObject<{}>> = {
  params?: P
  query?: Q
  /** Checks of several parameters, given those that passed and the names of those refused already. */
  refine?: (valid: Partial<Static<P> & Static<Q>>, refused: ReadonlySet<string>) => FieldError[]
}

export type HttpInputs<P extends TObject = TObject<{}>, Q extends TObject = TObject<{}>> = InputSchemas<P, Q> & {
  /**
   * The parameters of a request, from its URL and the path parameters its route matched; else
   * invalid_request. `more`: checks the operation makes later, with the request's time and data,
   * given here so that a refusal names their problems with the others (see `defineOperation`).
   */
  read(url: string, params?: Readonly<Record<string, string | null | undefined>>, more?: (valid: Partial<Static<P> & Static<Q>>) => FieldError[]): { params: Parsed<P>; query: Parsed<Q> }
}

const INTEGER_TEXT = /^(?:0|[1-9][0-9]*)$/
const DECIMAL_TEXT = /^(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/

const digits = (low: number, high: number) => (low === high ? String(low) : `[${low}-${high}]`)

/** The numbers from `low` to `high`, written with as many digits as both have (leading zeros inside the number allowed), as a regular expression. */
function sameWidth(low: string, high: string): string {
  if (low === high) return low
  const [first, last, width] = [Number(low[0]), Number(high[0]), low.length - 1]
  if (width === 0) return digits(first, last)
  if (first === last) return `${first}(?:${sameWidth(low.slice(1), high.slice(1))})`
  const [fromZero, toNines] = [/^0*$/.test(low.slice(1)), /^9*$/.test(high.slice(1))]
  const middle: [number, number] = [fromZero ? first : first + 1, toNines ? last : last - 1]
  return [
    ...(fromZero ? [] : [`${first}(?:${sameWidth(low.slice(1), '9'.repeat(width))})`]),
    ...(middle[0] <= middle[1] ? [`${digits(...middle)}[0-9]${width === 1 ? '' : `{${width}}`}`] : []),
    ...(toNines ? [] : [`${last}(?:${sameWidth('0'.repeat(width), high.slice(1))})`]),
  ].join('|')
}

/** The decimal text (INTEGER_TEXT) of the integers from `min` to `max` (0 ≤ min ≤ max), as a regular expression without anchors. */
export function integerRangePattern(min: number, max: number): string {
  const parts: string[] = []
  for (let width = String(min).length; width <= String(max).length; width++) {
    const low = Math.max(min, width === 1 ? 0 : 10 ** (width - 1))
    const high = Math.min(max, 10 ** width - 1)
    if (low <= high) parts.push(sameWidth(String(low), String(high)))
  }
  return parts.join('|')
}

type Bounded = TSchema & { minimum?: number; maximum?: number; default?: unknown; examples?: unknown[]; description?: string }

/**
 * The schema of a parameter's text, as the OpenAPI document publishes it: an integer or an amount
 * becomes text whose pattern admits exactly what `fromText` and the bounds accept (`limit=05`,
 * `price_min=1e5` are refused by the document as by the server); other schemas are unchanged.
 */
export function parameterText(schema: TSchema): TSchema {
  const { type, minimum = 0, maximum, description, default: fallback, examples } = schema as Bounded
  if ((type !== 'integer' && type !== 'number') || maximum === undefined || !Number.isInteger(minimum) || !Number.isInteger(maximum) || minimum < 0) return schema
  const pattern =
    type === 'integer'
      ? `^(?:${integerRangePattern(minimum, maximum)})$`
      : `^(?:(?:${integerRangePattern(minimum, maximum - 1)})(?:\\.[0-9]+)?|${maximum}(?:\\.0+)?)$`
  const form = type === 'integer' ? 'an integer' : 'an amount'
  const text = `${form} from ${minimum} to ${maximum}, in decimal digits without sign or leading zeros${type === 'number' ? ' (a fraction allowed: 1999.99)' : ''}`
  return Type.String({
    pattern,
    description: description ? `${description}; ${text}` : text,
    ...(fallback !== undefined ? { default: String(fallback) } : {}),
    ...(examples ? { examples: examples.map(String) } : {}),
  })
}

/** Query text → the type its schema declares, by the rule above. */
function fromText(schema: TSchema, text: string): unknown {
  if (schema.type === 'integer') return INTEGER_TEXT.test(text) ? Number(text) : text
  if (schema.type === 'number') return DECIMAL_TEXT.test(text) ? Number(text) : text
  return text
}

/** `+` as a space, then percent-decoded; null when not valid percent-encoding. Plain text (most of it) is taken as it is. */
const decode = (text: string): string | null => {
  if (!text.includes('%') && !text.includes('+')) return text
  try {
    return decodeURIComponent(text.replaceAll('+', ' '))
  } catch {
    return null
  }
}

/** The values of every query parameter, in the order given; a value that is not valid percent-encoding is null. */
function queryValues(url: string): Map<string, (string | null)[]> {
  const values = new Map<string, (string | null)[]>()
  const start = url.indexOf('?')
  if (start < 0) return values
  const end = url.indexOf('#', start)
  for (const pair of url.slice(start + 1, end < 0 ? undefined : end).split('&')) {
    if (!pair) continue
    const equals = pair.indexOf('=')
    const name = decode(equals < 0 ? pair : pair.slice(0, equals))
    if (name === null) continue
    const value = decode(equals < 0 ? '' : pair.slice(equals + 1))
    const given = values.get(name)
    if (given) given.push(value)
    else values.set(name, [value])
  }
  return values
}

/** A part's properties, listed once per schema: they are walked on every request. */
const propertiesOf = new WeakMap<TObject, [string, TSchema][]>()
const propertyList = (schema: TObject) => {
  let list = propertiesOf.get(schema)
  if (!list) propertiesOf.set(schema, (list = Object.entries(schema.properties)))
  return list
}

const valuesIn = (values: ReadonlyMap<string, readonly unknown[]>) => (name: string) => values.get(name)

/** One part (path or query) read by its object schema; `raw` gives a name's values; problems are added to `problems`. */
function readPart(schema: TObject, raw: (name: string) => readonly unknown[] | undefined, problems: Map<string, string>): Record<string, unknown> {
  const value: Record<string, unknown> = {}
  const properties = propertyList(schema)
  for (const [name, property] of properties) {
    const given = raw(name)
    if (!given) continue
    if (given.length > 1) problems.set(name, `Given ${given.length} times; send each parameter at most once`)
    else if (given[0] === null) problems.set(name, 'Expected percent-encoded UTF-8')
    else value[name] = foldCase(property, typeof given[0] === 'string' ? fromText(property, given[0]) : given[0])
  }
  for (const [name, property] of properties) {
    if (value[name] === undefined && !problems.has(name) && 'default' in property) value[name] = property.default
  }
  if (!checker(schema).Check(value)) {
    for (const { field, message } of inputErrors(schema, value, 'request')) if (!problems.has(field)) problems.set(field, message)
  }
  return value
}

export function httpInputs<P extends TObject = TObject<{}>, Q extends TObject = TObject<{}>>(schemas: InputSchemas<P, Q>): HttpInputs<P, Q> {
  const order = [...Object.keys(schemas.params?.properties ?? {}), ...Object.keys(schemas.query?.properties ?? {})]
  const what = schemas.params && schemas.query ? 'request' : schemas.params ? 'path' : 'query'
  return {
    ...schemas,
    read(url, pathParams = {}, more) {
      const problems = new Map<string, string>()
      const params = schemas.params
        ? readPart(schemas.params, (name) => (Object.hasOwn(pathParams, name) ? [pathParams[name]] : undefined), problems)
        : {}
      const query = schemas.query ? readPart(schemas.query, valuesIn(queryValues(url)), problems) : {}
      if (schemas.refine || more) {
        const valid: Record<string, unknown> = { ...params, ...query }
        for (const name of problems.keys()) delete valid[name]
        for (const check of [schemas.refine, more]) {
          for (const { field, message } of check?.(valid as Partial<Static<P> & Static<Q>>, new Set(problems.keys())) ?? []) if (!problems.has(field)) problems.set(field, message)
        }
      }
      if (problems.size > 0) {
        const rank = (field: string) => (order.includes(field) ? order.indexOf(field) : order.length)
        throw invalidInput(what, [...problems].sort(([a], [b]) => rank(a) - rank(b)).map(([field, message]) => ({ field, message })))
      }
      return { params: params as Parsed<P>, query: query as Parsed<Q> }
    },
  }
}
