import { grown } from '../../src/domain/market/listing-columns.ts'

/** A history interval's figures an estimate compares, besides its price (ListingColumns keeps the cents). */
export type IntervalFigures = {
  areaM2: number
  bedrooms: number
  bathrooms: number
  /** The instant from which the listing was public during the interval, in microseconds; null if it never was. */
  publicFromMicros: number | null
}

/** The code of a value kept aside (see ByteNumbers). */
const ASIDE = 255

/**
 * Numbers that are nearly always whole multiples of 1/`per` below 255/`per` (bedrooms: whole, per 1;
 * bathrooms: whole or halves, per 2), one byte each: the value × `per`, exact both ways (× 2 and / 2
 * only move a double's exponent). Any other value is kept, exactly, in a Map beside, its code 255.
 */
class ByteNumbers {
  private codes: Uint8Array
  private readonly aside = new Map<number, number>()

  constructor(
    private readonly per: number,
    capacity: number,
  ) {
    this.codes = new Uint8Array(capacity)
  }

  grow(size: number): void {
    this.codes = grown(this.codes, size)
  }

  set(slot: number, value: number): void {
    const code = value * this.per
    if (Number.isInteger(code) && code >= 0 && code < ASIDE) {
      this.codes[slot] = code
      this.aside.delete(slot)
    } else {
      this.codes[slot] = ASIDE
      this.aside.set(slot, value)
    }
  }

  get(slot: number): number {
    const code = this.codes[slot]!
    return code === ASIDE ? this.aside.get(slot)! : code / this.per
  }
}

/**
 * Per history interval slot (HistoryIndex), its IntervalFigures in typed arrays: the area as the
 * double it was written as (8 bytes), the instant it was public from (8 bytes, +Infinity for never),
 * bedrooms and bathrooms a byte each. 18 bytes a slot.
 */
export class ComparableFigures {
  private area: Float64Array
  private publicFrom: Float64Array
  private readonly bedrooms: ByteNumbers
  private readonly bathrooms: ByteNumbers

  constructor(capacity: number) {
    this.area = new Float64Array(capacity)
    this.publicFrom = new Float64Array(capacity)
    this.bedrooms = new ByteNumbers(1, capacity)
    this.bathrooms = new ByteNumbers(2, capacity)
  }

  /** Room for `size` slots (the caller doubles). */
  grow(size: number): void {
    this.area = grown(this.area, size)
    this.publicFrom = grown(this.publicFrom, size)
    this.bedrooms.grow(size)
    this.bathrooms.grow(size)
  }

  set(slot: number, figures: IntervalFigures): void {
    this.area[slot] = figures.areaM2
    this.publicFrom[slot] = figures.publicFromMicros ?? Infinity
    this.bedrooms.set(slot, figures.bedrooms)
    this.bathrooms.set(slot, figures.bathrooms)
  }

  /** Whether the listing of `slot`'s interval was public at `micros` (the interval being open then). */
  publicAt(slot: number, micros: number): boolean {
    return this.publicFrom[slot]! <= micros
  }

  areaM2(slot: number): number {
    return this.area[slot]!
  }

  bedroomsOf(slot: number): number {
    return this.bedrooms.get(slot)
  }

  bathroomsOf(slot: number): number {
    return this.bathrooms.get(slot)
  }
}
