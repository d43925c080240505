// The events the ingest spools (docs/cost.md "Runner ingest"): `llm.request` per counted request and
// `session.meta` per session that appeared or grew, each attributed to its project, slot, issue and run.
// Ids derive from the request's key (or the session's) and the payload, so a re-send after a crash is
// stored once and a changed payload is a new event the server applies over the old one. A session's
// metadata goes out at once the first time, then at most every META_THROTTLE_MS while it grows.
import { createHash } from 'node:crypto';
import type { LlmRequest, Runtime, SessionMeta } from '../../protocol/usage.ts';
import type * as usage from '../../protocol/usage.ts';
import type { NewEvent } from '../spool.ts';
import type { Attributor } from './attribution.ts';
import type { SessionTracker } from './scan.ts';

// The event kinds, typed against protocol/usage.ts without importing its schemas (and all of zod with
// them) into the single-file runner.
const LLM_REQUEST: typeof usage.LLM_REQUEST = 'llm.request';
const SESSION_META: typeof usage.SESSION_META = 'session.meta';

/** A session's metadata is sent at most this often while it grows (the first time at once). */
export const META_THROTTLE_MS = 30_000;

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

export class UsageEvents {
  /** Requests made into events since the start. */
  requests = 0;
  /** Digest of the last session.meta made per session (kept in offsets.json). */
  metaSent: Record<string, string> = {};
  /** Sessions whose metadata may have changed since it was last made. */
  readonly dirtyMeta = new Set<string>();
  private readonly metaAt = new Map<string, number>();
  private out: NewEvent[] = [];
  private readonly prefix: string;

  constructor(
    runnerId: string,
    readonly attributor: Attributor,
    private readonly tracker: SessionTracker,
  ) {
    this.prefix = runnerId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
  }

  /** Events made and not taken yet. */
  get waiting(): number {
    return this.out.length;
  }

  /** The events made so far, handed over once. */
  take(): NewEvent[] {
    const events = this.out;
    this.out = [];
    return events;
  }

  /** After a restart: the digests sent before; sessions whose metadata differs from them are sent again. */
  restored(metas: Record<string, string>): void {
    this.metaSent = metas;
    for (const key of this.tracker.sessions.keys()) if (this.metaSent[key] !== sha(JSON.stringify(this.metaPayload(key).payload)).slice(0, 16)) this.dirtyMeta.add(key);
  }

  request(r: LlmRequest, cwd: string | null | undefined, branch: string | null | undefined, sessionId: string, runtime: Runtime): void {
    const a = this.attributor.of(runtime, sessionId, cwd, branch);
    const payload: LlmRequest = { ...r, ...(a.project ? { project: a.project } : {}), ...(a.slot ? { slot: a.slot } : {}), ...(a.issue ? { issue: a.issue } : {}), ...(a.run ? { run: a.run } : {}) };
    const text = JSON.stringify(payload);
    this.out.push({
      id: `${this.prefix}.llm.${sha(r.key).slice(0, 32)}.${sha(text).slice(0, 8)}`,
      source: a.project ? `project:${a.project}` : 'runner',
      kind: LLM_REQUEST,
      ts: r.at,
      payload: payload as unknown as Record<string, unknown>,
    });
    this.requests++;
  }

  private metaPayload(key: string): { payload: SessionMeta; source: string } {
    const s = this.tracker.sessions.get(key)!;
    const a = this.attributor.of(s.runtime, s.sessionId, s.cwd, s.branch);
    const { project: _cwd, ...rest } = s;
    const payload: SessionMeta = { ...rest, models: [...rest.models].sort(), project: a.project, slot: a.slot, issue: a.issue, run: a.run };
    return { payload, source: a.project ? `project:${a.project}` : 'runner' };
  }

  /** session.meta for the dirty sessions not throttled (all of them with `all`); true when some wait. */
  flushMeta(all: boolean): boolean {
    const now = Date.now();
    let later = false;
    for (const key of [...this.dirtyMeta]) {
      const last = this.metaAt.get(key);
      if (!all && last !== undefined && now - last < META_THROTTLE_MS) {
        later = true;
        continue;
      }
      this.dirtyMeta.delete(key);
      const { payload, source } = this.metaPayload(key);
      const text = JSON.stringify(payload);
      const digest = sha(text).slice(0, 16);
      if (this.metaSent[key] === digest) continue;
      this.metaAt.set(key, now);
      this.metaSent[key] = digest;
      this.out.push({ id: `${this.prefix}.meta.${sha(key).slice(0, 32)}.${digest.slice(0, 8)}`, source, kind: SESSION_META, ts: payload.lastAt, payload: payload as unknown as Record<string, unknown> });
    }
    return later;
  }
}
