import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * PGlite's WebAssembly module (9 MB), compiled once per process and given to every PGlite it opens
 * (a module holds no state: each instance gets its own memory). Compiling takes 0.3 s of an
 * embedded start; the server's entry starts it before it loads its own modules when the store is
 * embedded, so that the two overlap (decision 0124).
 */

/** Beside the PGlite this process imports, where PGlite itself looks for it. */
const wasmFile = () => fileURLToPath(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite')))

let compiling: Promise<WebAssembly.Module | undefined> | undefined

/** The compiled module, compiling it on the first call; undefined when it cannot be read here (PGlite then loads its own). */
export function pgliteModule(): Promise<WebAssembly.Module | undefined> {
  compiling ??= Promise.resolve()
    .then(() => WebAssembly.compile(readFileSync(wasmFile())))
    .catch(() => undefined)
  return compiling
}
