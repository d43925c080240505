// The spool (spec: Runner to server events; DESIGN §3): every event is durably on disk before it is
// sent and is removed only after the server's `ack` lists its id, so a kill -9 of the runner or the
// server at any moment loses nothing (the server stores by event id, so a resend is stored once).
//
// Layout: one file per event in `spool/`, named `<ms:13>.<counter:8>.<proc:6>.json` and holding the
// event as JSON. It is written as a temp file, fsync'd, renamed into place, and the directory is
// fsync'd — a file with a final name is always complete. Names sort in write order (time, then a
// per-process counter; the time never goes back within a process), and events are sent in name
// order with one batch in flight at a time, so the events of one source arrive in the order they were
// written. Other processes (`svc-runner spool-append`) may add files; the daemon picks them up on a rescan.
// Files that cannot be read back are moved to `spool/corrupt/` and logged, never sent.
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_BATCH, MAX_FRAME_BYTES, runnerEvent } from '../protocol/frames.ts';
import type { RunnerEvent } from '../protocol/frames.ts';
import { syncDir } from './config.ts';

export const SPOOL_NAME = /^(\d{13})\.(\d{8})\.([a-z0-9]{6})\.json$/;
/** Largest event the spool accepts; a batch never exceeds a frame. */
export const MAX_EVENT_BYTES = 256 * 1024;
const MAX_BATCH_BYTES = MAX_FRAME_BYTES - 64 * 1024;

export interface NewEvent {
  source: string;
  kind: string;
  payload: Record<string, unknown>;
  ts?: string;
  /** A caller-chosen stable id (events.jsonl lines: the same line always gets the same id). */
  id?: string;
}

/** Count of events waiting in a spool directory (for `status`). */
export function spoolCount(dir: string): number {
  try {
    return readdirSync(dir).filter((n) => SPOOL_NAME.test(n)).length;
  } catch {
    return 0;
  }
}

export class Spool {
  private readonly proc = randomBytes(6).toString('hex').replace(/[^a-z0-9]/g, '').slice(0, 6).padEnd(6, '0');
  private counter = 0;
  private lastMs = 0;
  /** Names on disk, sorted; ids of the ones read back; names sent and not yet acknowledged. */
  private names: string[] = [];
  private readonly known = new Set<string>();
  private readonly idOf = new Map<string, string>();
  /** Files per id: usually one; two when a caller-chosen id was spooled again (the server stores it once). */
  private readonly nameOf = new Map<string, Set<string>>();
  private readonly inflight = new Set<string>();
  private readonly prefix: string;

  constructor(
    readonly dir: string,
    runnerId = 'r',
    private readonly onCorrupt: (name: string, reason: string) => void = () => {},
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.prefix = runnerId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
  }

  get waiting(): number {
    return this.names.length;
  }

  get inFlight(): number {
    return this.inflight.size;
  }

  /** Write events durably (one directory fsync for the lot); they are in the spool when this returns. */
  append(events: NewEvent[]): RunnerEvent[] {
    const written: RunnerEvent[] = [];
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
      const text = JSON.stringify(event);
      if (Buffer.byteLength(text) > MAX_EVENT_BYTES) throw new Error(`event ${e.kind} is larger than ${MAX_EVENT_BYTES} bytes`);
      const name = `${String(ms).padStart(13, '0')}.${String(n).padStart(8, '0')}.${this.proc}.json`;
      const tmp = join(this.dir, `.${name}.tmp`);
      const fd = openSync(tmp, 'wx', 0o600);
      try {
        writeSync(fd, text);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, join(this.dir, name));
      this.remember(name, event.id);
      written.push(event);
    }
    if (written.length) syncDir(this.dir);
    return written;
  }

  private remember(name: string, id?: string): void {
    if (!this.known.has(name)) {
      // Appends are almost always the newest name; keep the list sorted without re-sorting it all.
      const last = this.names[this.names.length - 1];
      this.known.add(name);
      if (last === undefined || last < name) this.names.push(name);
      else this.names = [...this.names, name].sort();
    }
    if (id) {
      this.idOf.set(name, id);
      const names = this.nameOf.get(id);
      if (names) names.add(name);
      else this.nameOf.set(id, new Set([name]));
    }
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
    for (const name of onDisk) this.known.add(name);
  }

  /** The next events to send, oldest first (at most MAX_BATCH, within a frame); marks them in flight. */
  takeBatch(max = MAX_BATCH): RunnerEvent[] {
    const batch: RunnerEvent[] = [];
    let bytes = 64;
    for (const name of [...this.names]) {
      if (batch.length >= max) break;
      if (this.inflight.has(name)) continue;
      const event = this.read(name);
      if (!event) continue;
      const size = Buffer.byteLength(JSON.stringify(event)) + 1;
      if (batch.length && bytes + size > MAX_BATCH_BYTES) break;
      bytes += size;
      batch.push(event);
      this.inflight.add(name);
    }
    return batch;
  }

  private read(name: string): RunnerEvent | null {
    let reason: string;
    try {
      const parsed = runnerEvent.safeParse(JSON.parse(readFileSync(join(this.dir, name), 'utf8')));
      if (parsed.success) {
        this.remember(name, parsed.data.id);
        return parsed.data;
      }
      reason = 'not an event';
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.scan(); // removed behind our back
        return null;
      }
      reason = err instanceof SyntaxError ? 'not JSON' : String((err as NodeJS.ErrnoException).code ?? err);
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

  /** The server stored these: delete their files. Unknown ids (a late ack) are ignored. */
  ack(ids: string[]): number {
    const removed = new Set<string>();
    for (const id of ids) {
      for (const name of [...(this.nameOf.get(id) ?? [])]) {
        try {
          unlinkSync(join(this.dir, name));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        }
        this.forget(name);
        removed.add(name);
      }
    }
    if (removed.size) {
      this.names = this.names.filter((n) => !removed.has(n));
      syncDir(this.dir);
    }
    return removed.size;
  }

  private forget(name: string): void {
    this.known.delete(name);
    this.inflight.delete(name);
    const id = this.idOf.get(name);
    const names = id ? this.nameOf.get(id) : undefined;
    names?.delete(name);
    if (id && names?.size === 0) this.nameOf.delete(id);
    this.idOf.delete(name);
  }

  /** The connection dropped or an ack did not come: everything in flight is sent again. */
  requeue(): void {
    this.inflight.clear();
  }
}
