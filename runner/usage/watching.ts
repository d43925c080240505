// Which transcripts the ingest reads, and when (docs/runner.md "Sessions ingest"): `@parcel/watcher`
// (recursive) on each config dir's projects/ and each Codex home's sessions/ and archived_sessions/ when
// its native module loads; the files it names are gathered for DEBOUNCE_MS and handed over as one set.
// Without it (or besides it) the ingest's timer lists the trees in full (listFiles with null).
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { errorText, log } from '../log.ts';
import { under } from './attribution.ts';
import { claudeFiles, codexFiles } from './dirs.ts';
import type { UsageDirs } from './dirs.ts';

/** File events are gathered this long before a pass. */
const DEBOUNCE_MS = 100;
/**
 * A directory created under a watched root is listed when its event comes and once more this long after:
 * files made in it (or in directories made in it) before the watcher had added its watch get no event.
 */
const NEW_DIR_RELIST_MS = 1000;

export type ParcelWatcher = {
  subscribe: (dir: string, fn: (err: Error | null, events: { path: string; type: string }[]) => void) => Promise<{ unsubscribe: () => Promise<void> }>;
};

/** @parcel/watcher when its native module loads here (it is never bundled), else null. */
export function loadParcelWatcher(env: { SVC_INGEST_NO_WATCHER?: string }): ParcelWatcher | null {
  // Test switch: behave as where the native module is absent.
  if (env.SVC_INGEST_NO_WATCHER === '1') return null;
  try {
    const load = createRequire(import.meta.url);
    const name = ['@parcel', 'watcher'].join('/');
    const w = load(name) as ParcelWatcher;
    return typeof w?.subscribe === 'function' ? w : null;
  } catch {
    return null;
  }
}

/** The transcript trees under watch; `onPaths` gets the files that changed, once their events paused. */
export class TranscriptWatch {
  private readonly subs = new Map<string, { unsubscribe: () => Promise<void> } | null>();
  private dirty = new Set<string>();
  private dirtyTimer?: NodeJS.Timeout;
  private readonly relists = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly parcel: ParcelWatcher,
    private readonly onPaths: (paths: Set<string>) => void,
  ) {}

  /** Watch the trees of `dirs` not watched yet (a config dir or Codex home may appear later). */
  add(dirs: UsageDirs): void {
    if (this.stopped) return;
    const roots = [...dirs.claude.map((d) => join(d, 'projects')), ...dirs.codex.flatMap((h) => [join(h, 'sessions'), join(h, 'archived_sessions')])];
    for (const dir of roots) {
      if (this.subs.has(dir) || !existsSync(dir)) continue;
      this.subs.set(dir, null);
      this.parcel
        .subscribe(dir, (err, events) => {
          if (err) return log.warn('transcript watcher error; the rescan covers it', { dir, error: errorText(err) });
          const created: string[] = [];
          for (const e of events) {
            if (e.path.endsWith('.jsonl')) this.dirty.add(e.path);
            // A new directory: files written into it before its watch was set get no event of their own.
            else if (e.type === 'create') {
              for (const f of jsonlUnder(e.path)) this.dirty.add(f);
              created.push(e.path);
            }
          }
          this.markDirty();
          if (created.length) {
            const relist = setTimeout(() => {
              this.relists.delete(relist);
              for (const d of created) for (const f of jsonlUnder(d)) this.dirty.add(f);
              this.markDirty();
            }, NEW_DIR_RELIST_MS);
            this.relists.add(relist);
          }
        })
        .then((s) => {
          if (this.stopped) void s.unsubscribe();
          else this.subs.set(dir, s);
        })
        .catch((e) => {
          this.subs.delete(dir);
          log.warn('could not watch a transcript directory; the rescan covers it', { dir, error: errorText(e) });
        });
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.dirtyTimer);
    for (const t of this.relists) clearTimeout(t);
    this.relists.clear();
    for (const s of this.subs.values()) void s?.unsubscribe().catch(() => {});
    this.subs.clear();
  }

  /** Hand over the files in `dirty` once the watcher's events have paused for DEBOUNCE_MS. */
  private markDirty(): void {
    if (this.stopped || !this.dirty.size) return;
    clearTimeout(this.dirtyTimer);
    this.dirtyTimer = setTimeout(() => {
      const paths = this.dirty;
      this.dirty = new Set();
      this.onPaths(paths);
    }, DEBOUNCE_MS);
  }
}

/** The files to look at: all of them under `dirs` (null), or those the watcher named. In path order. */
export function listFiles(dirs: UsageDirs, paths: Set<string> | null): { path: string; runtime: 'claude' | 'codex' }[] {
  if (paths === null) return [...claudeFiles(dirs.claude).map((path) => ({ path, runtime: 'claude' as const })), ...codexFiles(dirs.codex).map((path) => ({ path, runtime: 'codex' as const }))];
  const out: { path: string; runtime: 'claude' | 'codex' }[] = [];
  for (const path of [...paths].sort()) {
    if (dirs.claude.some((d) => under(path, join(d, 'projects')))) out.push({ path, runtime: 'claude' });
    else
      for (const h of dirs.codex) {
        if (under(path, join(h, 'sessions'))) out.push({ path, runtime: 'codex' });
        // A relative path in both trees is read from sessions/ only (as `usage` and ccusage do).
        else if (under(path, join(h, 'archived_sessions')) && !existsSync(join(h, 'sessions', relative(join(h, 'archived_sessions'), path)))) out.push({ path, runtime: 'codex' });
        else continue;
        break;
      }
  }
  return out;
}

/** Every *.jsonl below a directory (none when it is not one). */
function jsonlUnder(dir: string): string[] {
  try {
    return (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((n) => n.endsWith('.jsonl')).map((n) => join(dir, n));
  } catch {
    return [];
  }
}
