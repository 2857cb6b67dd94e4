/**
 * The MySQL/MariaDB side of wire-cap.ts: a meter over the bytes the server sends, in front of
 * mysql2's packet parser (which joins a value's 16 MB packets into one buffer before it reads
 * any of it).
 *
 * A packet is a 3-byte little-endian length and a sequence byte; a payload of 0xffffff bytes
 * continues in the next packet (one logical packet). While a query is armed (arm() just
 * before it is sent, disarm() when it is answered) the meter follows its text-protocol answer:
 * the column count, the column definitions up to an EOF packet (mysql2 does not ask for
 * CLIENT_DEPRECATE_EOF), then rows up to an EOF or error packet. A row is a run of
 * length-encoded strings (0xfb: NULL; 0xfc/0xfd/0xfe: a 2/3/8-byte length follows), and each
 * length is checked against the value cap; every byte of the answer counts towards the result.
 * Unarmed (connection set-up, our own queries), a logical packet may be at most
 * INTERNAL_CAPS.maxValueBytes.
 */
import type { CortadoError } from '../../../protocol/errors.js';
import { INTERNAL_CAPS, tooLarge, type TooLargeKind, type WireCaps, type WireMeter } from './wire-cap.js';

const HEADER_BYTES = 4;
const MAX_PAYLOAD = 0xffffff;
const OK = 0x00;
const NULL_VALUE = 0xfb;
const LENGTH_2 = 0xfc;
const LENGTH_3 = 0xfd;
const LENGTH_8_OR_EOF = 0xfe;
const ERR = 0xff;

const Answer = {
  /** the next packet starts an answer: OK, ERR, LOCAL INFILE or a column count */
  Start: 0,
  /** column definitions, up to an EOF packet */
  Columns: 1,
  /** rows, up to an EOF or ERR packet */
  Rows: 2,
} as const;
type Answer = (typeof Answer)[keyof typeof Answer];

const Value = {
  /** a value's first byte: its length, NULL, or how many length bytes follow */
  Prefix: 0,
  /** the length bytes */
  Length: 1,
  /** the value's bytes */
  Body: 2,
  /** nothing more to read in this packet */
  Ignore: 3,
} as const;
type Value = (typeof Value)[keyof typeof Value];

export class MysqlWireMeter implements WireMeter {
  tripped: CortadoError | undefined;

  private caps: WireCaps = INTERNAL_CAPS;
  private armed = false;
  private resultBytes = 0;

  // framing
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerLength = 0;
  /** payload bytes of the current packet still to come */
  private packetLeft = 0;
  /** the current packet is 0xffffff bytes: the logical packet goes on in the next one */
  private continues = false;
  /** bytes of the current logical packet so far */
  private logicalBytes = 0;
  /** where the current packet starts in the chunk being read (0: in an earlier chunk) */
  private packetStart = 0;

  // the answer of an armed query
  private answer: Answer = Answer.Start;
  /** what the answer becomes once the current logical packet ends */
  private nextAnswer: Answer = Answer.Start;
  private first = false;
  /** the current logical packet fits in one packet (an EOF is short, a row starting with an 8-byte length is not) */
  private short = false;
  private value: Value = Value.Ignore;
  private lengthBytes = 0;
  private lengthRead = 0;
  private valueLength = 0;
  private valueLeft = 0;

  /** The next answer is a query's: follow it under these caps. Call between commands. */
  arm(caps: WireCaps): void {
    this.caps = caps;
    this.armed = true;
    this.resultBytes = 0;
    this.answer = Answer.Start;
    this.nextAnswer = Answer.Start;
    this.value = Value.Ignore;
  }

  disarm(): void {
    this.armed = false;
    this.caps = INTERNAL_CAPS;
  }

  feed(chunk: Buffer): number {
    if (this.tripped) return 0;
    const end = chunk.length;
    let i = 0;
    this.packetStart = 0;
    while (i < end) {
      if (this.packetLeft === 0) {
        if (this.headerLength === 0) this.packetStart = i;
        const take = Math.min(HEADER_BYTES - this.headerLength, end - i);
        chunk.copy(this.header, this.headerLength, i, i + take);
        this.headerLength += take;
        i += take;
        if (this.headerLength < HEADER_BYTES) return end;
        this.headerLength = 0;
        const length = this.header[0]! | (this.header[1]! << 8) | (this.header[2]! << 16);
        if (!this.onPacket(length)) return this.packetStart;
        if (length === 0) this.onPacketEnd();
        continue;
      }
      const take = Math.min(this.packetLeft, end - i);
      if (this.armed && this.value !== Value.Ignore && !this.readValues(chunk, i, i + take)) return this.packetStart;
      i += take;
      this.packetLeft -= take;
      if (this.packetLeft === 0) this.onPacketEnd();
    }
    return end;
  }

  /** A packet header: count it; false when it goes over a cap. */
  private onPacket(length: number): boolean {
    const starts = !this.continues;
    this.logicalBytes = starts ? length : this.logicalBytes + length;
    this.continues = length === MAX_PAYLOAD;
    this.packetLeft = length;
    if (this.armed) {
      this.resultBytes += HEADER_BYTES + length;
      if (this.resultBytes > this.caps.maxResultBytes) return this.trip('result');
    } else if (this.logicalBytes > this.caps.maxValueBytes) {
      return this.trip('value');
    }
    if (starts) {
      this.first = true;
      this.short = length < MAX_PAYLOAD;
      this.nextAnswer = this.answer;
      // nothing to read in an empty packet; else the first byte decides (readValues)
      this.value = this.armed && length > 0 ? Value.Prefix : Value.Ignore;
    }
    return true;
  }

  private onPacketEnd(): void {
    if (this.continues) return;
    this.answer = this.nextAnswer;
    this.value = Value.Ignore;
  }

  /** Read the payload bytes [from, to) of an armed answer; false when a value is over its cap. */
  private readValues(chunk: Buffer, from: number, to: number): boolean {
    let i = from;
    if (this.first && i < to) {
      this.first = false;
      const b = chunk[i]!;
      const eof = b === LENGTH_8_OR_EOF && this.short;
      switch (this.answer) {
        case Answer.Start:
          // OK, ERR, LOCAL INFILE: the answer is complete; else a column count, then columns
          this.nextAnswer = b === OK || b === ERR || b === NULL_VALUE ? Answer.Start : Answer.Columns;
          this.value = Value.Ignore;
          return true;
        case Answer.Columns:
          if (eof) this.nextAnswer = Answer.Rows;
          this.value = Value.Ignore;
          return true;
        case Answer.Rows:
          if (eof || b === ERR) {
            this.nextAnswer = Answer.Start; // the end (another result may follow)
            this.value = Value.Ignore;
            return true;
          }
          break; // a row: its first byte is its first value's length
      }
    }
    while (i < to) {
      switch (this.value) {
        case Value.Prefix: {
          const b = chunk[i++]!;
          if (b < NULL_VALUE) {
            this.valueLength = b;
            if (!this.startValue()) return false;
          } else if (b === LENGTH_2 || b === LENGTH_3 || b === LENGTH_8_OR_EOF) {
            this.lengthBytes = b === LENGTH_2 ? 2 : b === LENGTH_3 ? 3 : 8;
            this.lengthRead = 0;
            this.valueLength = 0;
            this.value = Value.Length;
          } else if (b !== NULL_VALUE) {
            this.value = Value.Ignore; // not a row after all
          }
          break;
        }
        case Value.Length: {
          this.valueLength += chunk[i++]! * 2 ** (8 * this.lengthRead);
          this.lengthRead++;
          if (this.lengthRead === this.lengthBytes && !this.startValue()) return false;
          break;
        }
        case Value.Body: {
          const skip = Math.min(this.valueLeft, to - i);
          i += skip;
          this.valueLeft -= skip;
          if (this.valueLeft === 0) this.value = Value.Prefix;
          break;
        }
        case Value.Ignore:
          return true;
      }
    }
    return true;
  }

  /** A value's length is known: check it, then skip its bytes. */
  private startValue(): boolean {
    if (this.valueLength > this.caps.maxValueBytes) return this.trip('value');
    this.valueLeft = this.valueLength;
    this.value = this.valueLeft > 0 ? Value.Body : Value.Prefix;
    return true;
  }

  private trip(kind: TooLargeKind): false {
    this.tripped = tooLarge(kind, this.caps);
    return false;
  }
}
