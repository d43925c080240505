// The ingest's state file, `offsets.json` in the state dir (docs/runner.md "Sessions ingest"): per
// transcript its identity (dev, inode), size and the byte offset read up to; the digest of the last
// session.meta sent per session; the status `svc-runner status` prints. Phase 1 of a start replays each
// file up to its stored offset (replayLines); a file whose identity changed, that is shorter than its
// offset or has no newline right before it was replaced or truncated (offsetStillValid).
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { writeFileAtomic } from '../config.ts';
import { newlineBefore } from './lines.ts';
import type { RunnerConfig } from '../config.ts';
import { errorText, log } from '../log.ts';
import { stateDir } from '../paths.ts';
import type { Env } from '../paths.ts';

export const offsetsPath = (env: Env) => join(stateDir(env), 'offsets.json');

const fileRec = z.object({
  runtime: z.enum(['claude', 'codex']),
  dev: z.number(),
  ino: z.number(),
  size: z.number().int().min(0),
  offset: z.number().int().min(0),
  corrupt: z.number().int().min(0).default(0),
});
export type FileRec = z.infer<typeof fileRec>;

const ingestStatus = z.object({
  mode: z.enum(['watcher', 'poll', 'off']),
  pid: z.number().int(),
  files: z.number().int(),
  sessions: z.number().int(),
  requests: z.number().int(),
  corrupt: z.number().int(),
  lateReplacements: z.number().int().default(0),
  ingestSince: z.string().nullable(),
  updatedAt: z.string(),
});
export type IngestStatus = z.infer<typeof ingestStatus>;

const offsetsFile = z.object({
  version: z.literal(1),
  files: z.record(z.string(), fileRec),
  /** Digest of the last session.meta spooled per session, so a restart does not send it again. */
  metas: z.record(z.string(), z.string()).default({}),
  status: ingestStatus.optional(),
});
export type OffsetsFile = z.infer<typeof offsetsFile>;

/** The stored state, or null when there is none or it cannot be read (then transcripts are read from 0). */
export function readOffsets(file: string): OffsetsFile | null {
  try {
    return offsetsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') log.warn('offsets.json unreadable; transcripts are read from their start (the server stores each request once)', { error: errorText(e) });
    return null;
  }
}

export function writeOffsets(file: string, state: OffsetsFile): void {
  try {
    writeFileAtomic(file, JSON.stringify(state) + '\n');
  } catch (e) {
    log.warn('could not write offsets.json', { error: errorText(e) });
  }
}

/** The stored offset still belongs to this file: same identity, not shorter, right after a newline. */
export function offsetStillValid(path: string, rec: FileRec, st: { dev: number; ino: number; size: number }): boolean {
  return !(st.dev !== rec.dev || st.ino !== rec.ino || st.size < rec.offset || (rec.offset > 0 && !newlineBefore(path, rec.offset)));
}

/** Phase 1: every line of a file before `end` (a stored offset, so after a newline), in order. */
export function replayLines(path: string, end: number, onLine: (line: Buffer, at: number) => void): void {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let pos = 0;
    let carry: Buffer | null = null;
    let lineStart = 0;
    while (pos < end) {
      const got = readSync(fd, buf, 0, Math.min(buf.length, end - pos), pos);
      if (got === 0) break;
      let start = 0;
      for (let nl = buf.indexOf(10, 0); nl !== -1 && nl < got; nl = buf.indexOf(10, start)) {
        const piece = buf.subarray(start, nl);
        const line: Buffer = carry ? Buffer.concat([carry, piece]) : piece;
        carry = null;
        if (line.length) onLine(line, lineStart);
        start = nl + 1;
        lineStart = pos + start;
      }
      if (start < got) carry = carry ? Buffer.concat([carry, buf.subarray(start, got)]) : Buffer.from(buf.subarray(start, got));
      pos += got;
    }
  } finally {
    closeSync(fd);
  }
}

/** What `svc-runner status` prints about the ingest, from offsets.json. */
export function describeIngest(env: Env, daemonPid: number | null, config: Pick<RunnerConfig, 'sessions'>): string {
  if (!config.sessions.enabled) return 'off (sessions.enabled is false)';
  let s: IngestStatus | undefined;
  try {
    s = offsetsFile.parse(JSON.parse(readFileSync(offsetsPath(env), 'utf8'))).status;
  } catch {}
  const counts = s ? `${s.files} file(s), ${s.sessions} session(s), ${s.requests} request(s) sent since start, ${s.corrupt} corrupt line(s) skipped${s.lateReplacements ? `, ${s.lateReplacements} late replacement(s)` : ''}` : 'nothing read yet';
  if (!daemonPid || !s || s.pid !== daemonPid) return `not running (${counts})`;
  const mode = s.mode === 'watcher' ? 'watching with @parcel/watcher' : s.mode === 'poll' ? 'polling (@parcel/watcher not available)' : 'off';
  return `${mode}; ${counts}`;
}
