/**
 * The PostgreSQL side of wire-cap.ts: a meter over the bytes a backend sends, in front of
 * pg-protocol's parser (which waits for a whole message, however large, before it reads it).
 *
 * Every message is a type byte and an int32 length (itself included). A DataRow ('D') is an
 * int16 field count, then per field an int32 length (-1: NULL) and that many bytes. The meter
 * reads only those: a DataRow's length counts towards the result (reset at each
 * ReadyForQuery 'Z', the end of one query), a field's length is checked against the value
 * cap, and any other message (an error or notice quoting a huge value) against the value cap
 * plus a little. The first byte over a cap is never handed on.
 */
import type { CortadoError } from '../../../protocol/errors.js';
import { INTERNAL_CAPS, MESSAGE_SLACK_BYTES, tooLarge, type TooLargeKind, type WireCaps, type WireMeter } from './wire-cap.js';

const DATA_ROW = 0x44; // 'D'
const READY_FOR_QUERY = 0x5a; // 'Z'
const HEADER_BYTES = 5;

const Phase = {
  /** between messages: reading a type byte and a length */
  Header: 0,
  /** a DataRow's field count */
  FieldCount: 1,
  /** a field's length */
  FieldLength: 2,
  /** a field's bytes */
  FieldBody: 3,
  /** the rest of a message nobody needs to look into */
  Skip: 4,
} as const;
type Phase = (typeof Phase)[keyof typeof Phase];

export class PgWireMeter implements WireMeter {
  /** the caps in force: a query's own while it runs (PostgresEngine.execute), else INTERNAL_CAPS */
  caps: WireCaps = INTERNAL_CAPS;
  tripped: CortadoError | undefined;

  private phase: Phase = Phase.Header;
  /** DataRow bytes since the last ReadyForQuery */
  private resultBytes = 0;
  /** bytes of the current message's body still to come */
  private left = 0;
  /** fields of the current DataRow still to come */
  private fields = 0;
  /** bytes of the current field still to come */
  private fieldLeft = 0;
  /** a header or an integer split across chunks */
  private readonly partial = Buffer.alloc(HEADER_BYTES);
  private partialLength = 0;
  /** where the current message starts in the chunk being read (0: in an earlier chunk) */
  private messageStart = 0;

  feed(chunk: Buffer): number {
    if (this.tripped) return 0;
    const end = chunk.length;
    let i = 0;
    this.messageStart = 0;
    while (i < end) {
      switch (this.phase) {
        case Phase.Header: {
          if (this.partialLength === 0) this.messageStart = i;
          let type: number;
          let length: number;
          if (this.partialLength === 0 && end - i >= HEADER_BYTES) {
            type = chunk[i]!;
            length = chunk.readUInt32BE(i + 1);
            i += HEADER_BYTES;
          } else {
            const take = Math.min(HEADER_BYTES - this.partialLength, end - i);
            chunk.copy(this.partial, this.partialLength, i, i + take);
            this.partialLength += take;
            i += take;
            if (this.partialLength < HEADER_BYTES) return end;
            this.partialLength = 0;
            type = this.partial[0]!;
            length = this.partial.readUInt32BE(1);
          }
          const body = Math.max(0, length - 4);
          if (type === DATA_ROW) {
            this.resultBytes += 1 + length;
            if (this.resultBytes > this.caps.maxResultBytes) return this.trip('result');
            this.phase = Phase.FieldCount;
          } else {
            if (body > this.caps.maxValueBytes + MESSAGE_SLACK_BYTES) return this.trip('message');
            if (type === READY_FOR_QUERY) this.resultBytes = 0;
            this.phase = Phase.Skip;
          }
          this.left = body;
          break;
        }
        case Phase.FieldCount:
        case Phase.FieldLength: {
          const want = this.phase === Phase.FieldCount ? 2 : 4;
          let value: number;
          if (this.partialLength === 0 && end - i >= want && this.left >= want) {
            value = want === 2 ? chunk.readInt16BE(i) : chunk.readInt32BE(i);
            i += want;
            this.left -= want;
          } else {
            const take = Math.min(want - this.partialLength, end - i, this.left);
            chunk.copy(this.partial, this.partialLength, i, i + take);
            this.partialLength += take;
            i += take;
            this.left -= take;
            if (this.partialLength < want) break; // more in the next chunk (or a malformed message: left is 0)
            this.partialLength = 0;
            value = want === 2 ? this.partial.readInt16BE(0) : this.partial.readInt32BE(0);
          }
          if (this.phase === Phase.FieldCount) {
            this.fields = value;
            this.phase = this.fields > 0 ? Phase.FieldLength : Phase.Skip;
          } else {
            this.fields--;
            if (value > this.caps.maxValueBytes) return this.trip('value');
            this.fieldLeft = Math.max(0, value);
            this.phase = this.fieldLeft > 0 ? Phase.FieldBody : this.fields > 0 ? Phase.FieldLength : Phase.Skip;
          }
          break;
        }
        case Phase.FieldBody: {
          const skip = Math.min(this.fieldLeft, end - i, this.left);
          i += skip;
          this.fieldLeft -= skip;
          this.left -= skip;
          if (this.fieldLeft === 0) this.phase = this.fields > 0 ? Phase.FieldLength : Phase.Skip;
          break;
        }
        case Phase.Skip: {
          const skip = Math.min(this.left, end - i);
          i += skip;
          this.left -= skip;
          break;
        }
      }
      // a message ends where its length says, whatever its fields claimed
      if (this.left === 0 && (this.phase as Phase) !== Phase.Header) {
        this.partialLength = 0;
        this.phase = Phase.Header;
      }
    }
    return end;
  }

  /** Stop here: the driver gets the chunk up to the start of the offending message. */
  private trip(kind: TooLargeKind): number {
    this.tripped = tooLarge(kind, this.caps);
    return this.messageStart;
  }
}
