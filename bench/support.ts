/**
 * What the benchmarks share (run with Bun): child servers started and stopped by the script, `wrk`
 * from a separate process, percentiles, the machine line, and writing one section of results.md
 * without touching the others.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dirname, '..')
export const RESULTS = join(ROOT, 'bench/results.md')
export const BUN = process.execPath

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  await probe.stop(true)
  return port
}

export type Child = { child: ChildProcess; pid: number; output: () => string; stop(): Promise<void> }

/** Whether processes can be pinned to cores: `taskset` is there and the machine has more than one core. */
export const canPin = os.cpus().length > 1 && spawnSync('taskset', ['--version']).status === 0

/** `command` run on the given cores (`taskset -c`, which execs it: same pid) when pinning is possible. */
const pinned = (cpus: string | undefined, command: string, args: string[]): [string, string[]] =>
  cpus !== undefined && canPin ? ['taskset', ['-c', cpus, command, ...args]] : [command, args]

/** Pins a running process, every thread of it, to `cpus` (nothing where pinning is not possible). */
export function pinRunning(pid: number, cpus: string): void {
  if (canPin) execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' })
}

export type ProcessOptions = {
  cwd?: string
  /** Cores to run on (`taskset -c` list, e.g. "1"); ignored where pinning is impossible. */
  cpus?: string
  /** Send stdout and stderr to this file instead of collecting them in memory (for chatty servers). */
  logFile?: string
  /** What runs `args` (a path, then its own arguments): this Bun unless told. */
  program?: string[]
}

/** A child process (Bun unless `program` says otherwise), in the project directory unless `cwd` says otherwise; SIGTERM on stop, SIGKILL after 10 s. */
export function startProcess(args: string[], env: Record<string, string>, { cwd = ROOT, cpus, logFile, program = [BUN] }: ProcessOptions = {}): Child {
  const [command, commandArgs] = pinned(cpus, program[0]!, [...program.slice(1), ...args])
  const logFd = logFile ? openSync(logFile, 'a') : undefined
  const stdio = logFd === undefined ? (['ignore', 'pipe', 'pipe'] as const) : (['ignore', logFd, logFd] as const)
  const child = spawn(command, commandArgs, { cwd, env: { ...process.env, ...env }, stdio: [...stdio] })
  if (logFd !== undefined) closeSync(logFd)
  let output = ''
  child.stdout?.on('data', (chunk) => (output += chunk))
  child.stderr?.on('data', (chunk) => (output += chunk))
  const exited = new Promise<void>((done) => child.once('exit', () => done()))
  return {
    child,
    pid: child.pid!,
    output: () => (logFile ? readFileSync(logFile, 'utf8').slice(-20_000) : output),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Polls `url` until it answers `status`; the process's output explains a failure. */
export async function waitFor(url: string, status: number, init: RequestInit, output: () => string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      if ((await fetch(url, init)).status === status) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} never answered ${status}:\n${output()}`)
    await sleep(100)
  }
}

/** Resident and peak resident memory of a process, in MiB (from /proc, Linux). */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 }
}

/** CPU time a process has used so far, in milliseconds (from /proc, Linux). */
export function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime, fields 14 and 15 of the whole line, in clock ticks of 10 ms
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * Waits until a process is (nearly) idle: under a fifth of a core over half a second, so that a
 * backlog left by one wrk run (queued requests still being answered) does not fall on the next one.
 */
export async function quiesce(pid: number, timeoutMs = 60_000): Promise<number> {
  const started = Date.now()
  for (;;) {
    const before = cpuMsOf(pid)
    await sleep(500)
    if (cpuMsOf(pid) - before < 100 || Date.now() - started > timeoutMs) return Date.now() - started
  }
}

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export type WrkResult = {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  requests: number
  /** Answers with a status outside 200–399. */
  non2xx: number
  /** Non-2xx answers and socket errors, in words; null when there were none. */
  errors: string | null
}

/** wrk latency like "812.00us", "1.23ms", "2.01s" → milliseconds. */
function toMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text)
  if (!match) throw new Error(`unexpected wrk latency "${text}"`)
  const factor = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm']
  return Number(match[1]) * factor
}

export type WrkOptions = {
  threads: number
  connections: number
  seconds: number
  authorization?: string
  /** A wrk Lua script (e.g. for POST bodies or rotating paths). */
  script?: string
  /** Cores to run wrk on (`taskset -c`), away from the server's. */
  cpus?: string
}

/** Runs wrk against one URL and reads its summary; non-2xx answers and socket errors are reported. */
export function wrk(url: string, options: WrkOptions): WrkResult {
  const args = [`-t${options.threads}`, `-c${options.connections}`, `-d${options.seconds}s`, '--latency']
  if (options.authorization) args.push('-H', `Authorization: ${options.authorization}`)
  if (options.script) args.push('-s', options.script)
  const output = execFileSync(...pinned(options.cpus, 'wrk', [...args, url]), { encoding: 'utf8' })
  const grab = (pattern: RegExp) => {
    const match = pattern.exec(output)
    if (!match) throw new Error(`cannot read wrk output:\n${output}`)
    return match[1]!
  }
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1]
  const socketErrors = /Socket errors: (.*)/.exec(output)?.[1]
  return {
    requestsPerSecond: Number(grab(/Requests\/sec:\s+([\d.]+)/)),
    p50Ms: toMs(grab(/\s50%\s+(\S+)/)),
    p99Ms: toMs(grab(/\s99%\s+(\S+)/)),
    requests: Number(grab(/(\d+) requests in/)),
    non2xx: Number(non2xx ?? 0),
    errors: [non2xx && `${non2xx} non-2xx responses`, socketErrors && `socket errors: ${socketErrors}`].filter(Boolean).join('; ') || null,
  }
}

/** A wrk Lua script, written into `dir`, that asks for `paths` in turn, one per request. */
export function rotatingPathsScript(dir: string, paths: string[]): string {
  const file = join(dir, `rotate-${Math.random().toString(36).slice(2)}.lua`)
  const lines = [`local paths = { ${paths.map((path) => JSON.stringify(path)).join(', ')} }`, 'local i = 0', 'request = function()', '  i = i % #paths + 1', '  return wrk.format(nil, paths[i])', 'end']
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

/** Stops a benchmark that needs wrk before it starts anything, with how to get it. */
export function requireWrk(): void {
  const probe = spawnSync('wrk', ['-v'], { stdio: 'ignore' })
  if ((probe.error as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') return
  console.error('this benchmark drives its load with wrk, which is not installed (Debian: apt-get install wrk)')
  process.exit(2)
}

export function wrkVersion(): string {
  let output: string
  try {
    output = execFileSync('wrk', ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? '') // `wrk -v` exits non-zero
  }
  return /^wrk \S+/.exec(output)?.[0] ?? 'wrk'
}

export const machine = () =>
  `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}`

export const loadAverage = () => os.loadavg()[0]!.toFixed(2)

/**
 * Replaces the section headed `## title` in results.md (up to the next `## `), or appends it.
 * The file is read just before writing so that other sections, maybe rewritten meanwhile by
 * another benchmark, are kept as they are.
 */
export function writeResultsSection(title: string, body: string) {
  const heading = `## ${title}`
  const section = `${heading}\n\n${body.trimEnd()}\n`
  const existing = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '# Benchmark results\n'
  const start = existing.search(new RegExp(`^${heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))
  let updated: string
  if (start < 0) {
    updated = `${existing.trimEnd()}\n\n${section}`
  } else {
    const next = existing.indexOf('\n## ', start + 1)
    updated = existing.slice(0, start) + section + (next < 0 ? '' : `\n${existing.slice(next + 1)}`)
  }
  writeFileSync(RESULTS, updated)
}
