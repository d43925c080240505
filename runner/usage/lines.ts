// Incremental JSONL reading (docs/cost.md "Reading"): from a byte offset, hand every COMPLETE line to a
// callback and return the offset after the last complete line. A partial last line (an agent still writing
// it) is not consumed: the next read starts at it. Memory stays bounded by the chunk size plus the longest
// line; a line longer than MAX_LINE_BYTES is skipped whole (counted as corrupt), never buffered.
// readLines (the daemon's ingest) reads with fs promises and never blocks the event loop for long;
// readLinesSync (a one-shot scan: `svc-runner usage`) reads the same way with synchronous calls and one
// reused buffer, which on a loaded machine saves a thread-pool round trip per open, read and close.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';

export const CHUNK_BYTES = 1 << 20;
export const MAX_LINE_BYTES = 64 << 20;

export interface ReadResult {
  /** Offset after the last complete line (where the next read starts). */
  offset: number;
  /** Size of the file when it was read; a size below the stored offset means truncated or replaced. */
  size: number;
  lines: number;
  /** Lines skipped for being longer than MAX_LINE_BYTES. */
  oversized: number;
}

/** Returning true stops the read after this line (the result's offset is then after it). */
type OnLine = (line: Buffer, lineOffset: number) => boolean | void;

/** Splits the chunks of one read into complete lines; a line across chunks is joined, up to MAX_LINE_BYTES. */
class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false; // inside an oversized line: drop bytes until its newline
  private lineStart: number; // file offset where the current (pending) line began
  stopped = false;

  constructor(
    readonly result: ReadResult,
    private readonly onLine: OnLine,
  ) {
    this.lineStart = result.offset;
  }

  /** The first `bytes` of `chunk`, read at file position `pos`. */
  feed(chunk: Buffer, bytes: number, pos: number): void {
    const result = this.result;
    let start = 0;
    while (start < bytes) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1 || nl >= bytes) {
        if (!this.skipping) {
          const rest = bytes - start;
          if (this.pendingBytes + rest > MAX_LINE_BYTES) {
            this.skipping = true;
            this.pending = [];
            this.pendingBytes = 0;
          } else {
            this.pending.push(Buffer.from(chunk.subarray(start, bytes)));
            this.pendingBytes += rest;
          }
        }
        return;
      }
      if (this.skipping) {
        this.skipping = false;
        result.oversized++;
      } else {
        const line = this.pendingBytes ? Buffer.concat([...this.pending, chunk.subarray(start, nl)]) : chunk.subarray(start, nl);
        if (this.pendingBytes) {
          this.pending = [];
          this.pendingBytes = 0;
        }
        if (line.length > 0) {
          result.lines++;
          if (this.onLine(line, this.lineStart) === true) this.stopped = true;
        }
      }
      start = nl + 1;
      this.lineStart = pos + start;
      result.offset = this.lineStart;
      if (this.stopped) return;
    }
  }
}

/** The reads readLines and readLinesSync make into `chunk`, from `offset` to `size`: yields where and how
 *  much to read, takes back the bytes read (0: the file got shorter) and feeds them to the splitter; ends at
 *  `size`, at a read of 0 bytes or when onLine stops. */
function* chunkReads(splitter: LineSplitter, chunk: Buffer, offset: number, size: number): Generator<{ pos: number; length: number }, void, number> {
  for (let pos = offset; pos < size; ) {
    const bytesRead = yield { pos, length: Math.min(chunk.length, size - pos) };
    if (bytesRead === 0) break;
    splitter.feed(chunk, bytesRead, pos);
    if (splitter.stopped) break;
    pos += bytesRead;
  }
}

/**
 * Calls `onLine(line, lineOffset)` for each complete line (without its `\n`; a trailing `\r` is kept, JSON
 * ignores it) from `offset` on. The buffer passed to onLine is only valid during the call.
 */
export async function readLines(path: string, offset: number, onLine: OnLine): Promise<ReadResult> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const result: ReadResult = { offset, size, lines: 0, oversized: 0 };
    if (offset >= size) return result;
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size - offset));
    const reads = chunkReads(new LineSplitter(result, onLine), chunk, offset, size);
    for (let r = reads.next(0); !r.done; ) r = reads.next((await fh.read(chunk, 0, r.value.length, r.value.pos)).bytesRead);
    return result;
  } finally {
    await fh.close();
  }
}

/** The first `bytes` bytes of a file (fewer when it is shorter). */
export function readHeadSync(path: string, bytes: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

let shared: Buffer | null = null;

/** readLines with synchronous reads into one reused buffer (for one-shot scans, not the daemon). */
export function readLinesSync(path: string, offset: number, onLine: OnLine): ReadResult {
  const fd = openSync(path, 'r');
  // A callback that reads another file meanwhile gets a buffer of its own.
  const chunk = shared ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
  shared = null;
  try {
    const size = fstatSync(fd).size;
    const result: ReadResult = { offset, size, lines: 0, oversized: 0 };
    if (offset >= size) return result;
    const reads = chunkReads(new LineSplitter(result, onLine), chunk, offset, size);
    for (let r = reads.next(0); !r.done; ) r = reads.next(readSync(fd, chunk, 0, r.value.length, r.value.pos));
    return result;
  } finally {
    shared = chunk;
    closeSync(fd);
  }
}

/** The offset sits right after a newline (else the file was rewritten in place); a file gone answers true (the read that follows finds out). */
export function newlineBefore(path: string, offset: number): boolean {
  try {
    const fd = openSync(path, 'r');
    try {
      const b = Buffer.alloc(1);
      return readSync(fd, b, 0, 1, offset - 1) === 1 && b[0] === 10;
    } finally {
      closeSync(fd);
    }
  } catch {
    return true;
  }
}
