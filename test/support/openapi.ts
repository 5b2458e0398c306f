import Ajv2020 from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

export type Json = Record<string, any>

/** Replaces every `{$ref: '#/components/…'}` by what it points at. */
export function resolveRefs(node: unknown, document: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(item, document))
  if (node === null || typeof node !== 'object') return node
  const ref = (node as Json).$ref
  if (typeof ref === 'string') return resolveRefs(ref.slice(2).split('/').reduce((at: Json, part) => at[part], document), document)
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolveRefs(value, document)]))
}

/** A JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1), with formats. */
export function schemaValidator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  return ajv
}
