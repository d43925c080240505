// The spool (spec: Runner to server events; DESIGN §3): every event is durably on disk before it is
// sent and is removed only after the server's `ack` lists its id, so a kill -9 of the runner or the
// server at any moment loses nothing (the server stores by event id, so a resend is stored once).
//
// Layout: one file per append (a group of events), in `spool/`, named
// `<ms:13>.<counter:8>.<proc:6>.<n>.jsonl` and holding its n events as JSON lines. It is written as a
// temp file, fsync'd once, renamed into place, and the directory is fsync'd — a file with a final name
// is always complete. An append larger than a frame is split into several files (one fsync each, one
// directory fsync for the lot), so a file never holds more than one `events` frame. Files of runners
// before 0.17 (`<ms>.<counter>.<proc>.json`, one event) are read the same way.
// Names sort in write order (time, then a per-process counter; the time never goes back within a
// process), and events are sent in name order, line order within a file. A file is removed when every
// one of its events was acknowledged (no directory fsync: a removal lost in a crash only resends
// events the server already stored, which it stores once). After a crash a partly acknowledged file is
// sent again whole: duplicates of acknowledged ids, never a loss.
//
// Several batches may be in flight (the sender allows MAX_IN_FLIGHT: sender.ts), but never two holding the same
// source: the server stores frames concurrently, so this keeps the events of one source stored in
// the order they were written, also when a batch fails and is sent again.
// Other processes (`svc-runner spool-append`, commands) may add files; the daemon picks them up on a
// rescan. Files that cannot be read back are moved to `spool/corrupt/` and logged, never sent.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_BATCH, MAX_FRAME_BYTES, runnerEvent } from '../protocol/frames.ts';
import type { RunnerEvent } from '../protocol/frames.ts';
import { syncDir } from './config.ts';

/** Spool file names: ms, counter, process, then the event count (absent in one-event files of older runners). */
export const SPOOL_NAME = /^(\d{13})\.(\d{8})\.([a-z0-9]{6})(?:\.(\d{1,6})\.jsonl|\.json)$/;
/** Largest event the spool accepts; a batch never exceeds a frame. */
export const MAX_EVENT_BYTES = 256 * 1024;
const MAX_BATCH_BYTES = MAX_FRAME_BYTES - 64 * 1024;
/** How many waiting events `takeBatch` looks through for sources not in flight. */
const LOOKAHEAD_EVENTS = 4 * MAX_BATCH;

export interface NewEvent {
  source: string;
  kind: string;
  payload: Record<string, unknown>;
  ts?: string;
  /** A caller-chosen stable id (events.jsonl lines: the same line always gets the same id). */
  id?: string;
}

/** Events in a spool file, from its name. */
function countOf(name: string): number {
  const m = SPOOL_NAME.exec(name);
  return m?.[4] ? Number(m[4]) : 1;
}

/** Count of events waiting in a spool directory (for `status`). */
export function spoolCount(dir: string): number {
  try {
    return readdirSync(dir)
      .filter((n) => SPOOL_NAME.test(n))
      .reduce((sum, n) => sum + countOf(n), 0);
  } catch {
    return 0;
  }
}

const WAITING = 0;
const IN_FLIGHT = 1;
const ACKED = 2;

/** A spool file read back: its events, each one's state, and how many are acknowledged. */
interface Loaded {
  events: RunnerEvent[];
  sizes: number[];
  state: Uint8Array;
  acked: number;
  /** Index of the first event not acknowledged (everything before it is). */
  first: number;
}

export class Spool {
  private readonly proc = randomBytes(6).toString('hex').replace(/[^a-z0-9]/g, '').slice(0, 6).padEnd(6, '0');
  private counter = 0;
  private lastMs = 0;
  /** Names on disk, sorted; the events they hold (by name); files read back. */
  private names: string[] = [];
  private readonly known = new Set<string>();
  private events = 0;
  private readonly loaded = new Map<string, Loaded>();
  /** Where each id of a read-back file is: usually one place; more when a caller-chosen id was spooled again. */
  private readonly where = new Map<string, { name: string; i: number }[]>();
  private inflightCount = 0;
  private readonly prefix: string;
  /** Called after every append that wrote something (the daemon wakes its sender). */
  onAppend?: () => void;

  constructor(
    readonly dir: string,
    runnerId = 'r',
    private readonly onCorrupt: (name: string, reason: string) => void = () => {},
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.prefix = runnerId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
  }

  /** Events in the spool not yet acknowledged (in flight included). */
  get waiting(): number {
    let acked = 0;
    for (const l of this.loaded.values()) acked += l.acked;
    return this.events - acked;
  }

  get inFlight(): number {
    return this.inflightCount;
  }

  /** Write events durably (one fsync per file, one directory fsync for the lot); they are in the spool when this returns. */
  append(events: NewEvent[]): RunnerEvent[] {
    const written: RunnerEvent[] = [];
    let group: string[] = [];
    let groupBytes = 0;
    let groupMs = 0;
    let groupN = 0;
    const flush = () => {
      if (group.length === 0) return;
      const name = `${String(groupMs).padStart(13, '0')}.${String(groupN).padStart(8, '0')}.${this.proc}.${group.length}.jsonl`;
      const tmp = join(this.dir, `.${name}.tmp`);
      const fd = openSync(tmp, 'wx', 0o600);
      try {
        writeSync(fd, group.join(''));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, join(this.dir, name));
      this.remember(name);
      group = [];
      groupBytes = 0;
    };
    for (const e of events) {
      const ms = (this.lastMs = Math.max(Date.now(), this.lastMs));
      const n = ++this.counter;
      const event = runnerEvent.parse({
        id: e.id ?? `${this.prefix}.${ms.toString(36)}.${this.proc}.${n}`,
        source: e.source,
        kind: e.kind,
        ts: e.ts ?? new Date(ms).toISOString(),
        payload: e.payload,
      });
      const line = JSON.stringify(event) + '\n';
      const bytes = Buffer.byteLength(line);
      if (bytes > MAX_EVENT_BYTES) throw new Error(`event ${e.kind} is larger than ${MAX_EVENT_BYTES} bytes`);
      if (group.length >= MAX_BATCH || groupBytes + bytes > MAX_BATCH_BYTES - 64) flush();
      if (group.length === 0) {
        groupMs = ms;
        groupN = n;
      }
      group.push(line);
      groupBytes += bytes;
      written.push(event);
    }
    flush();
    if (written.length) {
      syncDir(this.dir);
      this.onAppend?.();
    }
    return written;
  }

  private remember(name: string): void {
    if (this.known.has(name)) return;
    // Appends are almost always the newest name; keep the list sorted without re-sorting it all.
    const last = this.names[this.names.length - 1];
    this.known.add(name);
    this.events += countOf(name);
    if (last === undefined || last < name) this.names.push(name);
    else this.names = [...this.names, name].sort();
  }

  /** Re-read the directory: pick up files other processes wrote, forget ones that vanished. */
  scan(): void {
    let onDisk: string[];
    try {
      onDisk = readdirSync(this.dir).filter((n) => SPOOL_NAME.test(n)).sort();
    } catch {
      onDisk = [];
    }
    const present = new Set(onDisk);
    for (const name of this.names) if (!present.has(name)) this.forget(name);
    this.names = onDisk;
    this.known.clear();
    this.events = 0;
    for (const name of onDisk) {
      this.known.add(name);
      this.events += countOf(name);
    }
  }

  /**
   * The next events to send, oldest first (at most `max`, within a frame), marked in flight. Events
   * of a source in `busy` (in flight in another batch) are left for later, and so is every later
   * event of that source.
   */
  takeBatch(max = MAX_BATCH, busy: ReadonlySet<string> = new Set()): RunnerEvent[] {
    const batch: RunnerEvent[] = [];
    const ids = new Set<string>();
    const skipped = new Set(busy);
    let bytes = 64;
    let looked = 0;
    for (const name of [...this.names]) {
      if (batch.length >= max || looked >= LOOKAHEAD_EVENTS) break;
      const file = this.load(name);
      if (!file) continue;
      for (let i = file.first; i < file.events.length; i++) {
        if (file.state[i] !== WAITING) continue;
        if (batch.length >= max || looked >= LOOKAHEAD_EVENTS) break;
        looked++;
        const event = file.events[i];
        if (skipped.has(event.source)) continue;
        if (ids.has(event.id)) {
          // The same id twice (a caller-chosen id spooled again): it rides along; its ack covers both.
          file.state[i] = IN_FLIGHT;
          this.inflightCount++;
          continue;
        }
        if (batch.length && bytes + file.sizes[i] > MAX_BATCH_BYTES) {
          looked = LOOKAHEAD_EVENTS;
          break;
        }
        bytes += file.sizes[i];
        batch.push(event);
        ids.add(event.id);
        file.state[i] = IN_FLIGHT;
        this.inflightCount++;
      }
    }
    return batch;
  }

  private load(name: string): Loaded | null {
    const had = this.loaded.get(name);
    if (had) return had;
    let reason: string;
    try {
      const text = readFileSync(join(this.dir, name), 'utf8');
      const lines = text.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      const events: RunnerEvent[] = [];
      const sizes: number[] = [];
      for (const line of lines) {
        const parsed = runnerEvent.safeParse(JSON.parse(line));
        if (!parsed.success) throw new TypeError('not an event');
        events.push(parsed.data);
        sizes.push(Buffer.byteLength(line) + 1);
      }
      if (events.length === 0) throw new TypeError('empty');
      const file: Loaded = { events, sizes, state: new Uint8Array(events.length), acked: 0, first: 0 };
      this.loaded.set(name, file);
      events.forEach((e, i) => {
        const at = this.where.get(e.id);
        if (at) at.push({ name, i });
        else this.where.set(e.id, [{ name, i }]);
      });
      return file;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.scan(); // removed behind our back
        return null;
      }
      reason = err instanceof SyntaxError ? 'not JSON' : err instanceof TypeError ? err.message : String((err as NodeJS.ErrnoException).code ?? err);
    }
    this.quarantine(name, reason);
    return null;
  }

  private quarantine(name: string, reason: string): void {
    const corrupt = join(this.dir, 'corrupt');
    try {
      mkdirSync(corrupt, { recursive: true, mode: 0o700 });
      renameSync(join(this.dir, name), join(corrupt, name));
    } catch {
      // leave it; it is skipped below
    }
    this.names = this.names.filter((n) => n !== name);
    this.forget(name);
    this.onCorrupt(name, reason);
  }

  /** The server stored these: a file whose events are all acknowledged is deleted. Unknown ids (a late ack) are ignored. */
  ack(ids: string[]): number {
    const done: string[] = [];
    for (const id of ids) {
      for (const { name, i } of this.where.get(id) ?? []) {
        const file = this.loaded.get(name);
        if (!file || file.state[i] === ACKED) continue;
        if (file.state[i] === IN_FLIGHT) this.inflightCount--;
        file.state[i] = ACKED;
        file.acked++;
        while (file.first < file.events.length && file.state[file.first] === ACKED) file.first++;
        if (file.acked === file.events.length) done.push(name);
      }
    }
    for (const name of done) {
      try {
        unlinkSync(join(this.dir, name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      this.forget(name);
    }
    if (done.length) {
      const gone = new Set(done);
      this.names = this.names.filter((n) => !gone.has(n));
    }
    return done.length;
  }

  private forget(name: string): void {
    if (!this.known.delete(name)) return;
    const file = this.loaded.get(name);
    this.events -= file ? file.events.length : countOf(name);
    if (!file) return;
    this.loaded.delete(name);
    file.events.forEach((e, i) => {
      if (file.state[i] === IN_FLIGHT) this.inflightCount--;
      const at = this.where.get(e.id)?.filter((w) => w.name !== name);
      if (at?.length) this.where.set(e.id, at);
      else this.where.delete(e.id);
    });
  }

  /** These events were not acknowledged (dropped batch): they are sent again. */
  release(ids: Iterable<string>): void {
    for (const id of ids) {
      for (const { name, i } of this.where.get(id) ?? []) {
        const file = this.loaded.get(name);
        if (file?.state[i] !== IN_FLIGHT) continue;
        file.state[i] = WAITING;
        this.inflightCount--;
      }
    }
  }

  /** The connection dropped: everything in flight is sent again. */
  requeue(): void {
    for (const file of this.loaded.values()) {
      for (let i = file.first; i < file.state.length; i++) if (file.state[i] === IN_FLIGHT) file.state[i] = WAITING;
    }
    this.inflightCount = 0;
  }
}
