import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Elysia } from 'elysia'
import { JSON_TYPE } from '../http/errors.ts'
import type { Gate } from '../http/gate.ts'
import { type OpenApiDocument, undocumented } from '../http/openapi.ts'
import { prepared } from '../shared/ready-bytes.ts'

/** Swagger UI's browser bundle, served from this server: the page works offline and loads nothing from elsewhere. */
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const asset = (file: string) => readFileSync(join(SWAGGER_UI, file), 'utf8')

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Mirador API reference</title>
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="/docs/swagger-ui.css">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/swagger-ui-bundle.js"></script>
    <script src="/docs/start.js"></script>
  </body>
</html>
`

/**
 * Points Swagger UI at this server's document; no validator badge (it would call validator.swagger.io).
 * "Try it out" is off until the reader turns it on for an operation: the page is for reading first.
 * The key given to "Authorize" is kept in the browser's localStorage (persistAuthorization) and is
 * still there after a reload. An optional parameter starts empty when tried out: Swagger UI would
 * fill in its example or default (an April `as_of`, five filters of /listings), so the rows get a
 * view of the parameter without them to start from (`emptyOptionalInputs`); the read view still
 * shows the example and the default, and the empty input shows them as its placeholder
 * (`placeholders`). Required parameters keep their example: a request cannot go without them.
 */
const START = `const withoutPrefill = (param) => {
  if (!param || !param.remove) return param
  const schema = param.get('schema')
  const bare = param.remove('example').remove('examples').remove('default')
  return schema && schema.remove ? bare.set('schema', schema.remove('example').remove('default')) : bare
}
const emptyOptionalInputs = (Original, system) => (props) => {
  if (!props.rawParam || props.rawParam.get('required') === true) return system.React.createElement(Original, props)
  const specSelectors = Object.create(props.specSelectors, {
    parameterWithMetaByIdentity: { value: (...args) => withoutPrefill(props.specSelectors.parameterWithMetaByIdentity(...args)) },
  })
  return system.React.createElement(Original, { ...props, specSelectors })
}
const placeholders = (Original, system) => (props) => {
  const schema = props.schema && props.schema.get ? props.schema : null
  const example = schema && schema.get('examples') && schema.get('examples').first ? schema.get('examples').first() : undefined
  const fallback = schema ? schema.get('default') : undefined
  const hint = [example !== undefined ? 'e.g. ' + example : null, fallback !== undefined ? 'default ' + fallback : null].filter(Boolean).join(', ')
  return system.React.createElement(Original, hint && !props.value ? { ...props, description: props.description + ' (' + hint + ')' } : props)
}
window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  displayRequestDuration: true,
  persistAuthorization: true,
  plugins: [() => ({ wrapComponents: { parameterRow: emptyOptionalInputs, JsonSchema_string: placeholders } })],
})
`

/** Only what the page itself needs: no script, style or request reaches another origin. */
const PAGE_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'"

/** `GET /`: where a newcomer who opens the server's address finds the reference (docs/decisions.md). */
const ROOT = { service: 'mirador', docs: '/docs', openapi: '/api/v1/openapi.json' }

/**
 * The API's self-description, public (no key): the OpenAPI 3.1 document at /api/v1/openapi.json, a
 * reference page at /docs (Swagger UI) whose "Try it out" calls this server with the key you give
 * it, and `GET /` pointing to both.
 */
export function docsRoutes(deps: { gate: Gate; document: OpenApiDocument }) {
  const body = JSON.stringify(deps.document)
  const files = {
    css: asset('swagger-ui.css'),
    bundle: asset('swagger-ui-bundle.js'),
  }
  /**
   * A file of the page, as bytes made once: prepared, so that its ETag and compressed copies are made
   * once too (src/http/finish.ts), on the first request that asks for them.
   */
  const serve = (content: string, type: string, extra: Record<string, string> = {}) => {
    const bytes = prepared(new TextEncoder().encode(content))
    const headers = { 'content-type': type, 'cache-control': 'public, max-age=3600', ...extra }
    return ({ set }: { set: { headers: Record<string, unknown> } }) => {
      Object.assign(set.headers, headers)
      return bytes
    }
  }
  const open = { public: true as const, detail: undocumented() }
  return new Elysia({ name: 'docs' })
    .use(deps.gate)
    .get('/', () => ROOT, open)
    .get('/api/v1/openapi.json', serve(body, JSON_TYPE), open)
    .get('/docs', serve(PAGE, 'text/html; charset=utf-8', { 'content-security-policy': PAGE_POLICY }), open)
    .get('/docs/start.js', serve(START, 'text/javascript; charset=utf-8'), open)
    .get('/docs/swagger-ui.css', serve(files.css, 'text/css; charset=utf-8'), open)
    .get('/docs/swagger-ui-bundle.js', serve(files.bundle, 'text/javascript; charset=utf-8'), open)
}
