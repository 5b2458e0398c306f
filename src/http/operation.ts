import type { Static, TObject } from '@sinclair/typebox'
import { type Context, Elysia } from 'elysia'
import type { Scope } from '../domain/keys/key.ts'
import { type FieldError, isAppError } from '../shared/errors.ts'
import type { Parsed } from '../shared/input-schema.ts'
import type { Caller, Gate } from './gate.ts'
import type { HttpInputs } from './inputs.ts'
import { operation, type OperationSpec } from './openapi.ts'

/**
 * One operation of the API, declared once in its own file (src/<feature>/<operation>.ts): its
 * method and path, the scope it needs, its inputs, what it answers (its OpenAPI description, the
 * success schema and every error it can answer besides the gate's) and its handler. `mountOperations`
 * turns the list of them (src/app.ts `API_OPERATIONS`) into routes behind the gate; the OpenAPI
 * document, the docs page and the specs that list routes all read that one list.
 *
 * The house rules are kept by construction: the gate runs first (a refusal is the answer, the
 * handler never runs), then the inputs are read by their schemas (src/http/inputs.ts), all bad ones
 * named at once in a 400, and only then the handler, with a typed caller, path and query.
 * A JSON body is read by the handler (`readJsonBody`), after the gate, never by Elysia.
 */
export type OperationDeclaration<D, P extends TObject, Q extends TObject> = Omit<OperationSpec, 'inputs'> & {
  method: 'GET' | 'POST' | 'DELETE'
  /** Relative to /api/v1, with Elysia's parameters: `/zone/:slug`. */
  path: string
  /** The scope a key needs (the gate answers 401/403/429 before anything else runs). */
  access: Scope
  /** The path and query parameters (`httpInputs`); the handler receives them parsed. */
  inputs?: HttpInputs<P, Q>
  /** Given the operation's dependencies once, at start-up: the handler of each request. */
  handler(deps: D): (request: OperationRequest<P, Q>) => unknown
  /**
   * Checks the handler makes with the request's time and data (an instant in the market's range),
   * asked only when the inputs are refused anyway, so that the refusal names every bad parameter
   * at once; an accepted request pays nothing for them.
   */
  checkedWhenRefused?(deps: D): () => Promise<(valid: Partial<Static<P> & Static<Q>>) => FieldError[]>
}

/** What a handler is given: the request (for its headers and body), the response being made, the caller and the parsed inputs. */
export type OperationRequest<P extends TObject = TObject<{}>, Q extends TObject = TObject<{}>> = {
  request: Request
  set: Context['set']
  caller: Caller
  params: Parsed<P>
  query: Parsed<Q>
}

/** The context Elysia hands to a route: only what the operation uses (Elysia parses nothing else). */
type RouteContext = { request: Request; params: Record<string, string | undefined>; set: Context['set']; caller: Caller }

/** An operation ready to mount: its declaration, with the reading of its inputs folded into its handler. */
export type Operation<D> = {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  access: Scope
  spec: OperationSpec
  handler: (deps: D) => (context: RouteContext) => unknown
}

const NO_INPUTS = { params: {}, query: {} } as { params: Parsed<TObject<{}>>; query: Parsed<TObject<{}>> }

/** An operation, from its declaration (one file per operation). */
export function defineOperation<D, P extends TObject = TObject<{}>, Q extends TObject = TObject<{}>>(
  declaration: OperationDeclaration<D, P, Q>,
): Operation<D> {
  const { method, path, access, inputs, handler, checkedWhenRefused, ...document } = declaration
  return {
    method,
    path,
    access,
    spec: { ...document, ...(inputs ? { inputs } : {}) },
    handler(deps) {
      const handle = handler(deps) as (request: OperationRequest<TObject, TObject>) => unknown
      if (!inputs) return ({ request, set, caller }) => handle({ request, set, caller, ...NO_INPUTS })
      const later = checkedWhenRefused?.(deps)
      return ({ request, params, set, caller }) => {
        let read: ReturnType<typeof inputs.read>
        try {
          read = inputs.read(request.url, params)
        } catch (refusal) {
          if (!later || !isAppError(refusal) || refusal.code !== 'invalid_request') throw refusal
          // Read again with the later checks: the refusal names their problems too.
          return later().then((more) => inputs.read(request.url, params, more) && Promise.reject(refusal))
        }
        return handle({ request, set, caller, ...read })
      }
    },
  }
}

/** The routes of `operations`, behind `gate`, each declaring its scope and its OpenAPI operation (the route's `detail`). */
export function mountOperations<D>(name: string, gate: Gate, operations: readonly Operation<D>[], deps: D) {
  // Named: Elysia mounts a named plugin once, so each list mounted needs its own name.
  const routes = new Elysia({ name }).use(gate)
  for (const { method, path, access, spec, handler } of operations) {
    const handle = handler(deps)
    // The handler's parameters are written out: Elysia reads them to know what to prepare per request.
    const route = ({ request, params, set, caller }: RouteContext) => handle({ request, params, set, caller })
    const hook = { scope: access, detail: operation(spec) }
    if (method === 'GET') routes.get(path, route as never, hook)
    else if (method === 'POST') routes.post(path, route as never, hook)
    else routes.delete(path, route as never, hook)
  }
  return routes
}
