// Tailing each watched project's `.svc/events.jsonl` into the spool (docs/orchestrator.md "From the
// file to the server"). fs.watch on the `.svc/` directory plus a poll every fleet.eventsPollSeconds.
//
// At least once, and never twice from the file: each complete line becomes a spool event whose id is
// derived from (project, file generation, byte offset, line hash); the spool write is durable before
// `events-offsets.json` (byte offset, inode, generation per project; atomic rewrite) moves past it. A
// crash between the two re-spools the same lines under the same ids, which the server stores once.
// The offset always sits at a line start. A new inode, a file shorter than the offset, or an offset
// not right after a newline means the file was replaced or rewritten: the generation goes up and
// reading starts at 0 (a renamed-away old file in `.svc/` is drained first). A last line without its
// newline waits. Lines that are not a valid event are skipped and reported as `fleet.invalid_line`.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync, watch } from 'node:fs';
import type { FSWatcher, Stats } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { confine } from './confine.ts';
import type { ProjectEntry } from './config.ts';
import { writeFileAtomic } from './config.ts';
import { eventLine, MAX_LINE_BYTES, spoolKind } from './events-file.ts';
import { EVENTS_FILE, eventsPath, svcDir } from './fleet-paths.ts';
import { errorText, log } from './log.ts';
import type { NewEvent } from './spool.ts';

const offsetEntry = z.object({ dev: z.number(), ino: z.number(), offset: z.number().int().min(0), gen: z.number().int().min(1) });
type OffsetEntry = z.infer<typeof offsetEntry>;
const offsetsFile = z.record(z.string(), offsetEntry);

/** Most bytes read per pass; the rest is read on the next pass right after. */
const CHUNK = 1024 * 1024;

export interface SpoolLike {
  append(events: (NewEvent & { id?: string })[]): unknown;
}

export class EventsTail {
  private offsets: Record<string, OffsetEntry> = {};
  private readonly watchers = new Map<string, { root: string; watcher: FSWatcher | null }>();
  private projects: readonly ProjectEntry[] = [];
  private timer?: NodeJS.Timeout;
  private readonly busy = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly spool: SpoolLike,
    private readonly stateFile: string,
    private readonly pollMs: number,
    /** Prefix of the derived event ids (the runner's), so they are unique per runner. */
    private readonly idPrefix: string,
  ) {
    try {
      this.offsets = offsetsFile.parse(JSON.parse(readFileSync(stateFile, 'utf8')));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') log.warn('events-offsets.json unreadable; every events.jsonl is read from its start', { error: errorText(e) });
    }
  }

  start(projects: readonly ProjectEntry[]): void {
    this.setProjects(projects);
    this.timer = setInterval(() => this.scanAll(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    for (const w of this.watchers.values()) w.watcher?.close();
    this.watchers.clear();
  }

  setProjects(projects: readonly ProjectEntry[]): void {
    this.projects = projects;
    for (const [id, w] of this.watchers) {
      if (projects.some((p) => p.id === id && p.root === w.root)) continue;
      w.watcher?.close();
      this.watchers.delete(id);
    }
    this.scanAll();
  }

  scanAll(): Promise<void[]> {
    return Promise.all(this.projects.map((p) => this.scan(p)));
  }

  /** Watch `.svc/` of a project once it exists (the poll retries until then). */
  private ensureWatch(p: ProjectEntry): void {
    const w = this.watchers.get(p.id);
    if (w?.watcher) return;
    let watcher: FSWatcher | null = null;
    try {
      watcher = watch(svcDir(p.root), (_event, name) => {
        if (name === null || String(name).startsWith(EVENTS_FILE)) void this.scan(p);
      });
      watcher.on('error', () => {
        watcher?.close();
        this.watchers.set(p.id, { root: p.root, watcher: null });
      });
    } catch {
      // no .svc/ yet, or no notifications on this file system: the poll covers it
    }
    this.watchers.set(p.id, { root: p.root, watcher });
  }

  /** Read what is new in one project's file; one pass at a time per project. */
  scan(p: ProjectEntry): Promise<void> {
    const running = this.busy.get(p.id);
    if (running) {
      this.again.add(p.id);
      return running;
    }
    const pass = this.pass(p)
      .catch((e) => log.warn('reading events.jsonl failed', { project: p.id, error: errorText(e) }))
      .finally(() => {
        this.busy.delete(p.id);
        if (this.again.delete(p.id)) void this.scan(p);
      });
    this.busy.set(p.id, pass);
    return pass;
  }

  private async pass(p: ProjectEntry): Promise<void> {
    this.ensureWatch(p);
    // The file must really be inside the project root (a symlink out of it is not followed).
    const c = await confine(eventsPath(p.root), [p.root]);
    if (!c.ok) return;
    let fd: number;
    try {
      fd = openSync(c.real, 'r');
    } catch {
      return; // no file yet
    }
    try {
      const st = fstatSync(fd);
      let rec = this.offsets[p.id];
      if (rec && (rec.dev !== st.dev || rec.ino !== st.ino)) {
        this.drainRotated(p, rec);
        rec = this.offsets[p.id] = { dev: st.dev, ino: st.ino, offset: 0, gen: rec.gen + 1 };
      } else if (rec && (st.size < rec.offset || (rec.offset > 0 && !newlineBefore(fd, rec.offset)))) {
        log.warn('events.jsonl was truncated or rewritten; reading it from the start', { project: p.id });
        rec = this.offsets[p.id] = { ...rec, offset: 0, gen: rec.gen + 1 };
      }
      rec ??= this.offsets[p.id] = { dev: st.dev, ino: st.ino, offset: 0, gen: 1 };
      while (this.readLines(p, fd, rec, st)) {
        /* more than one chunk was waiting */
      }
    } finally {
      closeSync(fd);
    }
  }

  /** An old file renamed away inside `.svc/` (events.jsonl.1, …): spool what was left in it. */
  private drainRotated(p: ProjectEntry, rec: OffsetEntry): void {
    let names: string[] = [];
    try {
      names = readdirSync(svcDir(p.root)).filter((n) => n.startsWith(EVENTS_FILE) && n !== EVENTS_FILE);
    } catch {}
    for (const name of names) {
      let fd: number;
      try {
        fd = openSync(join(svcDir(p.root), name), 'r');
      } catch {
        continue;
      }
      try {
        const st = fstatSync(fd);
        if (st.dev !== rec.dev || st.ino !== rec.ino) continue;
        const old = { ...rec };
        while (this.readLines(p, fd, old, st, false)) {}
        return;
      } finally {
        closeSync(fd);
      }
    }
  }

  /** Spool the complete lines after rec.offset (up to CHUNK bytes), then save the new offset.
   *  True when a full chunk was read and more may follow. */
  private readLines(p: ProjectEntry, fd: number, rec: OffsetEntry, st: Stats, save = true): boolean {
    const size = fstatSync(fd).size;
    if (size <= rec.offset) return false;
    const want = Math.min(size - rec.offset, CHUNK);
    const buf = Buffer.allocUnsafe(want);
    const got = readSync(fd, buf, 0, want, rec.offset);
    const events: (NewEvent & { id: string })[] = [];
    let start = 0;
    for (let nl = buf.indexOf(10, 0); nl !== -1 && nl < got; nl = buf.indexOf(10, start)) {
      const at = rec.offset + start;
      const raw = buf.subarray(start, nl);
      start = nl + 1;
      if (raw.length === 0) continue;
      events.push(this.toEvent(p, rec.gen, at, raw));
    }
    if (start === 0 && got === CHUNK) {
      // One line longer than a chunk: skip it whole once its newline is there.
      const end = findNewline(fd, rec.offset + got, size);
      if (end === -1) return false;
      events.push(this.invalid(p, rec.gen, rec.offset, 'too_long'));
      start = end + 1 - rec.offset;
    }
    if (events.length) this.spool.append(events);
    if (start > 0) {
      rec.offset += start;
      rec.dev = st.dev;
      rec.ino = st.ino;
      if (save) this.save();
    }
    return got === CHUNK && start > 0;
  }

  private toEvent(p: ProjectEntry, gen: number, at: number, raw: Buffer): NewEvent & { id: string } {
    if (raw.length > MAX_LINE_BYTES) return this.invalid(p, gen, at, 'too_long');
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      return this.invalid(p, gen, at, 'not_json');
    }
    const parsed = eventLine.safeParse(json);
    if (!parsed.success) return this.invalid(p, gen, at, parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`).join('; ').slice(0, 300));
    const e = parsed.data;
    return {
      id: this.id(p, gen, at, raw),
      source: `project:${p.id}`,
      kind: spoolKind(e.type),
      ts: e.time,
      payload: { project: p.id, type: e.type, ...(e.slot ? { slot: e.slot } : {}), ...(e.issue ? { issue: e.issue } : {}), data: e.data, origin: 'events.jsonl' },
    };
  }

  private invalid(p: ProjectEntry, gen: number, at: number, reason: string): NewEvent & { id: string } {
    log.warn('events.jsonl: a line is not a valid event; skipped', { project: p.id, offset: at, reason });
    return { id: this.id(p, gen, at, Buffer.from(reason)), source: `project:${p.id}`, kind: 'fleet.invalid_line', payload: { project: p.id, offset: at, reason } };
  }

  private id(p: ProjectEntry, gen: number, at: number, raw: Buffer): string {
    const hash = createHash('sha256').update(raw).digest('hex').slice(0, 10);
    return `${this.idPrefix}.ev.${p.id}.${gen}.${at.toString(36)}.${hash}`;
  }

  private save(): void {
    writeFileAtomic(this.stateFile, JSON.stringify(this.offsets) + '\n');
  }
}

function newlineBefore(fd: number, offset: number): boolean {
  const b = Buffer.alloc(1);
  return readSync(fd, b, 0, 1, offset - 1) === 1 && b[0] === 10;
}

function findNewline(fd: number, from: number, size: number): number {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let at = from; at < size; at += buf.length) {
    const got = readSync(fd, buf, 0, Math.min(buf.length, size - at), at);
    const i = buf.subarray(0, got).indexOf(10);
    if (i !== -1) return at + i;
    if (got === 0) break;
  }
  return -1;
}
