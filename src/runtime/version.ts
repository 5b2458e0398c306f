import { readFileSync } from 'node:fs'

/** The version in package.json, read once: what `mirador_build_info` and the start-up log report. */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
