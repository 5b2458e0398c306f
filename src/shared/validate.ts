import type { Static, TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck, type ValueError, ValueErrorType } from '@sinclair/typebox/compiler'
import { type FieldError, invalidRequest } from './errors.ts'

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>()

/** The compiled check of a schema, compiled once. */
export function checker<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema)
  if (!check) {
    check = TypeCompiler.Compile(schema)
    compiled.set(schema, check)
  }
  return check as TypeCheck<T>
}

/** TypeBox says "Expected union value" for a union of literals; name the allowed values instead. */
function enumMessage(error: ValueError): string | undefined {
  if (error.type !== ValueErrorType.Union) return undefined
  const options = (error.schema as { anyOf?: { const?: unknown }[] }).anyOf
  if (!options || options.length === 0 || !options.every((o) => o.const !== undefined)) return undefined
  return `Expected one of: ${options.map((o) => String(o.const)).join(', ')}`
}

/** Field-level errors of `value` against `schema`, one per field (first message wins). */
export function fieldErrors(schema: TSchema, value: unknown): FieldError[] {
  const seen = new Map<string, string>()
  for (const error of checker(schema).Errors(value)) {
    const field = error.path.replace(/^\//, '').replaceAll('/', '.') || '(root)'
    if (!seen.has(field)) seen.set(field, enumMessage(error) ?? error.message)
  }
  return [...seen].map(([field, message]) => ({ field, message }))
}

/** Returns `value` typed by `schema`, or throws `invalid_request` naming every bad field. */
export function parseWith<T extends TSchema>(schema: T, value: unknown, what: string): Static<T> {
  if (checker(schema).Check(value)) return value
  const details = fieldErrors(schema, value)
  throw invalidRequest(`invalid ${what}: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details)
}

export function isValid<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return checker(schema).Check(value)
}
