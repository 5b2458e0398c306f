import { describe, expect, test } from 'vitest'
import { Components, StartFailed } from '../../src/runtime/components.ts'

/** Three components that record what they do in `journal`; `failing` names one whose start throws. */
function lockPortStore(journal: string[], failing?: string) {
  const step = (name: string) => {
    if (name === failing) throw new Error(`${name} is broken`)
    journal.push(`start ${name}`)
  }
  return Components.given<{ dir: string }>()
    .add({
      name: 'lock',
      start: ({ dir }) => (step('lock'), `${dir}/LOCK`),
      stop: (path) => void journal.push(`stop lock ${path}`),
    })
    .add({
      name: 'port',
      start: async ({ lock }) => (await Promise.resolve(), step('port'), { port: 8080, lockedBy: lock }),
      stop: async ({ port }) => void journal.push(`stop port ${port}`),
    })
    .add({ name: 'greeting', start: ({ port }) => (step('greeting'), `listening on ${port.port}`) })
    .add({
      name: 'store',
      start: ({ greeting }) => (step('store'), { greeting }),
      stop: () => void journal.push('stop store'),
    })
}

describe('start-up as a list of components', () => {
  test('components start in their order, each with what was given and the handles of those before it', async () => {
    const journal: string[] = []
    const running = await lockPortStore(journal).start({ dir: '/data' })
    expect(journal).toEqual(['start lock', 'start port', 'start greeting', 'start store'])
    expect(running.handles).toEqual({
      dir: '/data',
      lock: '/data/LOCK',
      port: { port: 8080, lockedBy: '/data/LOCK' },
      greeting: 'listening on 8080',
      store: { greeting: 'listening on 8080' },
    })
  })

  test('they stop in reverse order, once however often stop is called; a component without stop is skipped', async () => {
    const journal: string[] = []
    const running = await lockPortStore(journal).start({ dir: '/data' })
    journal.length = 0
    await Promise.all([running.stop(), running.stop()])
    await running.stop()
    expect(journal).toEqual(['stop store', 'stop port 8080', 'stop lock /data/LOCK'])
  })

  test('a start that fails stops the components already started, in reverse order, and names the one that failed', async () => {
    const journal: string[] = []
    const failure = await lockPortStore(journal, 'greeting')
      .start({ dir: '/data' })
      .catch((error: unknown) => error)
    expect(journal).toEqual(['start lock', 'start port', 'stop port 8080', 'stop lock /data/LOCK'])
    expect(failure).toBeInstanceOf(StartFailed)
    expect(failure).toMatchObject({ component: 'greeting', message: 'greeting: greeting is broken', cause: new Error('greeting is broken') })
  })

  test('a failing first component stops nothing', async () => {
    const journal: string[] = []
    await expect(lockPortStore(journal, 'lock').start({ dir: '/data' })).rejects.toMatchObject({ component: 'lock' })
    expect(journal).toEqual([])
  })

  test('a stop that fails does not keep the components before it running; the failure is thrown after all are stopped', async () => {
    const journal: string[] = []
    const running = await Components.given<object>()
      .add({ name: 'first', start: () => 1, stop: () => void journal.push('stop first') })
      .add({
        name: 'second',
        start: () => 2,
        stop: () => {
          throw new Error('second would not stop')
        },
      })
      .start({})
    await expect(running.stop()).rejects.toThrow('second would not stop')
    expect(journal).toEqual(['stop first'])
  })

  test('the list says its order, and two components may not share a name', () => {
    const list = lockPortStore([])
    expect(list.names).toEqual(['lock', 'port', 'greeting', 'store'])
    expect(() => list.add({ name: 'port', start: () => 0 })).toThrow('two components are named port')
  })
})
