// The ingest of the runtimes with a RecordReader (docs/runner.md "Runtimes: one folder each"; Gemini CLI now,
// OpenCode's database next): each store is read whole on every full pass of the ingest (ingest.ts). When its
// stamp changed, a request is spooled when its key is new or its content changed since this process sent it.
// After a restart everything is spooled again: the event ids derive from key and content (events.ts), so the
// server stores each request once.
import { errorText, log } from '../log.ts';
import { RUNTIME_LIST } from '../runtimes/index.ts';
import type { UsageDirs } from './dirs.ts';
import type { UsageEvents } from './events.ts';
import type { SessionTracker } from './scan.ts';

export class RecordIngest {
  private readonly stamps = new Map<string, string>();
  private readonly sent = new Map<string, string>();
  constructor(private readonly tracker: SessionTracker, private readonly events: UsageEvents) {}

  /** One pass over every record store; answers how many requests were spooled. `flush` spools what waits. */
  async pass(dirs: UsageDirs, sinceMs: number | null, flush: () => unknown): Promise<number> {
    let n = 0;
    for (const def of RUNTIME_LIST) {
      if (def.usage.kind !== 'records') continue;
      const roots = dirs.records?.[def.name] ?? [];
      if (!roots.length) continue;
      let read;
      try {
        read = await def.usage.reader.read(roots);
      } catch (e) {
        log.warn(`session ingest: ${def.label} usage could not be read`, { error: errorText(e) });
        continue;
      }
      if (this.stamps.get(def.name) === read.stamp) continue;
      this.stamps.set(def.name, read.stamp);
      for (const r of read.requests) {
        if (sinceMs !== null && (r.mtimeMs ?? r.ms) < sinceMs) continue; // as for transcripts: by when the store last changed
        const content = JSON.stringify(r.request);
        if (this.sent.get(r.request.key) === content) continue;
        this.sent.set(r.request.key, content);
        if (r.request.sessionId) {
          this.tracker.touch(def.name, r.request.sessionId, r.cwd ?? r.session, r.ms, r.request.model, r.cwd, null);
          this.events.dirtyMeta.add(`${def.name}\u0000${r.request.sessionId}`);
        }
        this.events.request(r.request, r.cwd, null, r.request.sessionId ?? r.session, def.name);
        n++;
      }
      flush();
    }
    return n;
  }
}
