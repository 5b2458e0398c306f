/**
 * Listing ids compare as the databases order them: both use the C collation (byte order), which for
 * JavaScript strings is code-unit order as long as ids are ASCII (they are `lst_` + hex).
 */
const before = (a: string, b: string) => a < b

/** `lst_` + 24 lowercase hex: every listing id (see listingId), kept as two 48-bit numbers. */
const PACKABLE = /^lst_([0-9a-f]{12})([0-9a-f]{12})$/
const EMPTY = 0
const PACKED = 1
const OTHER = 2

/**
 * The ids of the slots, and each id's slot. A listing id is kept as two numbers (16 bytes) instead
 * of a string, and the id → slot table is open addressing in a typed array instead of a Map: at a
 * million listings that is ~75 MB less for the garbage collector to keep and trace. Any other id
 * (tests use some) is kept as its string. Packed ids compare as their strings do: same prefix, same
 * length, and hex digits in the order of their values.
 */
export class IdTable {
  private kind = new Uint8Array(1024)
  private high = new Float64Array(1024)
  private low = new Float64Array(1024)
  private readonly others = new Map<number, string>()
  /** slot + 1 per entry; 0 empty, -1 a removed entry. */
  private table = new Int32Array(2048)
  private used = 0
  count = 0

  /** Makes room for slots below `slots`. */
  reserve(slots: number): void {
    if (slots <= this.kind.length) return
    const size = Math.max(slots, this.kind.length * 2)
    const kind = new Uint8Array(size)
    kind.set(this.kind)
    const high = new Float64Array(size)
    high.set(this.high)
    const low = new Float64Array(size)
    low.set(this.low)
    this.kind = kind
    this.high = high
    this.low = low
  }

  slotOf(id: string): number | undefined {
    const at = this.find(id)
    return at < 0 ? undefined : this.table[at]! - 1
  }

  set(slot: number, id: string): void {
    const match = PACKABLE.exec(id)
    if (match) {
      this.kind[slot] = PACKED
      this.high[slot] = Number.parseInt(match[1]!, 16)
      this.low[slot] = Number.parseInt(match[2]!, 16)
    } else {
      this.kind[slot] = OTHER
      this.others.set(slot, id)
    }
    if ((this.used + 1) * 2 > this.table.length) this.rehash(Math.max(this.table.length, (this.count + 1) * 4))
    let at = this.home(this.hashOfSlot(slot))
    while (this.table[at]! > 0) at = (at + 1) & (this.table.length - 1)
    if (this.table[at] === 0) this.used += 1
    this.table[at] = slot + 1
    this.count += 1
  }

  clear(slot: number): void {
    const at = this.find(this.idAt(slot))
    this.table[at] = -1
    this.kind[slot] = EMPTY
    this.others.delete(slot)
    this.count -= 1
  }

  idAt(slot: number): string {
    if (this.kind[slot] === OTHER) return this.others.get(slot)!
    return `lst_${hex48(this.high[slot]!)}${hex48(this.low[slot]!)}`
  }

  /** Negative when slot `a`'s id comes first in the databases' order (C collation: byte order). */
  compare(a: number, b: number): number {
    if (this.kind[a] === PACKED && this.kind[b] === PACKED) return this.high[a]! - this.high[b]! || this.low[a]! - this.low[b]!
    const x = this.idAt(a)
    const y = this.idAt(b)
    return before(x, y) ? -1 : before(y, x) ? 1 : 0
  }

  private find(id: string): number {
    const match = PACKABLE.exec(id)
    const high = match ? Number.parseInt(match[1]!, 16) : 0
    const low = match ? Number.parseInt(match[2]!, 16) : 0
    let at = this.home(match ? high : hashOfText(id))
    for (;;) {
      const entry = this.table[at]!
      if (entry === 0) return -1
      if (entry > 0) {
        const slot = entry - 1
        if (match ? this.kind[slot] === PACKED && this.high[slot] === high && this.low[slot] === low : this.others.get(slot) === id) return at
      }
      at = (at + 1) & (this.table.length - 1)
    }
  }

  private hashOfSlot(slot: number): number {
    return this.kind[slot] === PACKED ? this.high[slot]! : hashOfText(this.others.get(slot)!)
  }

  /** Where probing for `hash` starts (the ids are hashes themselves: their leading bits spread evenly). */
  private home(hash: number): number {
    return (hash % 2_147_483_647 ^ Math.floor(hash / 4096)) & (this.table.length - 1)
  }

  private rehash(size: number): void {
    let length = 2048
    while (length < size) length *= 2
    const old = this.table
    this.table = new Int32Array(length)
    this.used = 0
    for (const entry of old) {
      if (entry <= 0) continue
      let at = this.home(this.hashOfSlot(entry - 1))
      while (this.table[at] !== 0) at = (at + 1) & (length - 1)
      this.table[at] = entry
      this.used += 1
    }
  }
}

const HEX_BYTE = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))
const hex24 = (n: number) => HEX_BYTE[n >>> 16]! + HEX_BYTE[(n >>> 8) & 255]! + HEX_BYTE[n & 255]!
/** 12 hex digits of a 48-bit number (Number#toString(16) is several times slower). */
const hex48 = (n: number) => hex24(Math.floor(n / 16_777_216)) + hex24(n % 16_777_216)

/** FNV-1a of a string's code units. */
function hashOfText(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0
  return hash
}
