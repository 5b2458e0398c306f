import { expect, test } from 'vitest'
import { singleFlight } from '../../src/shared/single-flight.ts'

/** A flight that lands when told to, recording when it took off. */
function flight(log: string[], name: string, outcome: 'lands' | 'crashes' = 'lands') {
  let land!: () => void
  const landed = new Promise<void>((resolve) => (land = resolve))
  const work = async () => {
    log.push(`${name} takes off`)
    await landed
    if (outcome === 'crashes') throw new Error(`${name} crashed`)
    return name
  }
  return { work, land }
}

const turns = () => new Promise((resolve) => setTimeout(resolve, 5))

test('a second flight of a key takes off when the first has landed, and gets its own result', async () => {
  const fly = singleFlight()
  const log: string[] = []
  const first = flight(log, 'first')
  const second = flight(log, 'second')
  const firstDone = fly('k', first.work)
  const secondDone = fly('k', second.work)
  await turns()
  expect(log).toEqual(['first takes off'])
  first.land()
  expect(await firstDone).toBe('first')
  await turns()
  expect(log).toEqual(['first takes off', 'second takes off'])
  second.land()
  expect(await secondDone).toBe('second')
})

test('flights of other keys do not wait', async () => {
  const fly = singleFlight()
  const log: string[] = []
  const a = flight(log, 'a')
  const b = flight(log, 'b')
  const done = [fly('one', a.work), fly('other', b.work)]
  await turns()
  expect(log).toEqual(['a takes off', 'b takes off'])
  a.land()
  b.land()
  expect(await Promise.all(done)).toEqual(['a', 'b'])
})

test('a crashed flight fails its own caller only; the next one takes off', async () => {
  const fly = singleFlight()
  const log: string[] = []
  const crashing = flight(log, 'crashing', 'crashes')
  const next = flight(log, 'next')
  const crashed = fly('k', crashing.work)
  const nextDone = fly('k', next.work)
  crashing.land()
  await expect(crashed).rejects.toThrow('crashing crashed')
  next.land()
  expect(await nextDone).toBe('next')
  expect(log).toEqual(['crashing takes off', 'next takes off'])
})

test('three waiting for one key fly one at a time, in the order they came', async () => {
  const fly = singleFlight()
  const log: string[] = []
  const flights = ['1', '2', '3', '4'].map((name) => flight(log, name))
  const done = flights.map((f) => fly('k', f.work))
  for (const [i, f] of flights.entries()) {
    await turns()
    expect(log).toHaveLength(i + 1)
    f.land()
  }
  expect(await Promise.all(done)).toEqual(['1', '2', '3', '4'])
  expect(log).toEqual(['1 takes off', '2 takes off', '3 takes off', '4 takes off'])
})
