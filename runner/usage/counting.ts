// Which transcript lines count (docs/cost.md "Runner ingest", "Deduplication"): every line read goes
// through the same dedup as `svc-runner usage` — Claude by message and request id (a line without
// message.id by its own key), Codex by event key — and the sessions it touches are tracked. A replay
// (phase 1 of a start) only rebuilds this state; a live line that counts becomes an `llm.request`.
// A Claude sidechain line is held for the hold time, so a better duplicate that follows replaces it
// before anything is sent.
import type { ModelPrice } from '../../protocol/prices.ts';
import { log } from '../log.ts';
import { ClaudeDedup, fileContext, parseClaudeLine } from '../runtimes/claude/transcript.ts';
import type { ClaudeEntry } from '../runtimes/claude/transcript.ts';
import { codexEventKey, codexFileSession, parseCodexLine } from '../runtimes/codex/transcript.ts';
import type { CodexFileState } from '../runtimes/codex/transcript.ts';
import type { UsageEvents } from './events.ts';
import type { FileRec } from './offsets.ts';
import { claudeRequest, codexRequest } from './scan.ts';
import type { SessionTracker } from './scan.ts';

/** A transcript being read: its offsets.json record and, for a Codex rollout, its parser state. */
export interface Tracked {
  rec: FileRec;
  codex?: CodexFileState;
}

interface Held {
  entry: ClaudeEntry;
  until: number;
}

export class LineCounter {
  /** Sidechain lines not sent yet, by dedup index. */
  readonly held = new Map<number, Held>();
  /** Sent requests replaced after their hold by a duplicate with another request id. */
  lateReplacements = 0;
  private readonly dedup: ClaudeDedup;
  /** Claude lines without message.id (never deduplicated): their keys, so a re-read file does not send them again. */
  private readonly lineKeys = new Set<string>();
  private readonly codexSeen = new Set<string>();

  constructor(
    prices: readonly ModelPrice[],
    private readonly tracker: SessionTracker,
    private readonly events: UsageEvents,
    private readonly holdMs: number,
    /** A line was held: release it once its hold is over. */
    private readonly onHold: () => void,
    /** The rollout's Codex home asks for the priority tier. */
    private readonly fastTier: (path: string) => boolean,
  ) {
    this.dedup = new ClaudeDedup(prices);
  }

  /** One complete line; `live` sends what it counts, a replay only rebuilds the state. */
  line(path: string, t: Tracked, line: Buffer, at: number, live: boolean): void {
    if (t.rec.runtime === 'claude') {
      const v = parseClaudeLine(line, at, fileContext(path));
      if ('corrupt' in v) {
        if (live) t.rec.corrupt++;
        return;
      }
      if (!('entry' in v)) return;
      const e = v.entry;
      if (e.messageId === null) {
        const key = claudeRequest({ ...e, priceModel: e.priceModel ?? '' }).key;
        if (this.lineKeys.has(key)) return;
        this.lineKeys.add(key);
      }
      const res = this.dedup.add(e);
      if (!live) {
        if (res.kind !== 'dropped') this.touchClaude(e);
        return;
      }
      if (res.kind === 'dropped') return;
      const heldBefore = this.held.get(res.index);
      if (res.kind === 'replaced' && !heldBefore) {
        const prev = claudeRequest({ ...res.previous, priceModel: res.previous.priceModel ?? '' });
        if (prev.key !== claudeRequest({ ...e, priceModel: e.priceModel ?? '' }).key) {
          this.lateReplacements++;
          log.warn('a sent request was replaced by a duplicate with another request id after its hold; the server may count both', { messageId: e.messageId });
        }
      }
      if (e.sidechain && this.holdMs > 0) {
        // Not sent until no better duplicate came for a while (docs/cost.md "Runner ingest").
        this.held.set(res.index, { entry: e, until: heldBefore?.until ?? Date.now() + this.holdMs });
        this.onHold();
        return;
      }
      this.held.delete(res.index);
      this.emitClaude(e);
      return;
    }
    const v = parseCodexLine(line, at, path, t.codex!, codexFileSession(path));
    if ('corrupt' in v) {
      if (live) t.rec.corrupt++;
      return;
    }
    if (!('event' in v)) return;
    const k = codexEventKey(v.event);
    if (this.codexSeen.has(k)) return;
    this.codexSeen.add(k);
    const st = t.codex!;
    this.tracker.touch('codex', v.event.sessionId, st.cwd ?? '', v.event.ms, v.event.model, st.cwd, st.branch);
    const sk = `codex\u0000${v.event.sessionId}`;
    if (!live) return;
    this.events.dirtyMeta.add(sk);
    const s = this.tracker.sessions.get(sk)!;
    this.events.request(codexRequest(v.event, this.fastTier(path)), s.cwd, s.branch, v.event.sessionId, 'codex');
  }

  private touchClaude(e: ClaudeEntry): void {
    if (e.model === null || e.priceModel === null) return;
    this.tracker.touch('claude', e.sessionId, e.cwd ?? '', e.ms, e.priceModel, e.cwd, e.branch);
  }

  private emitClaude(e: ClaudeEntry): void {
    if (e.model === null || e.priceModel === null) return; // <synthetic> or no model: not a request
    this.touchClaude(e);
    this.events.dirtyMeta.add(`claude\u0000${e.sessionId}`);
    const s = this.tracker.sessions.get(`claude\u0000${e.sessionId}`)!;
    this.events.request(claudeRequest(e as ClaudeEntry & { priceModel: string }), e.cwd ?? s.cwd, e.branch ?? s.branch, e.sessionId, 'claude');
  }

  /** Send the held lines whose hold is over (all of them with `all`); true when some still wait. */
  releaseHeld(all: boolean): boolean {
    const now = Date.now();
    for (const [index, h] of this.held) {
      if (!all && h.until > now) continue;
      this.held.delete(index);
      // The dedup may have replaced it by a better sidechain line meanwhile: send what is kept.
      this.emitClaude(this.dedup.entries[index] ?? h.entry);
    }
    return this.held.size > 0;
  }

  /** Per file, the offset of its first held line: after a crash, reading resumes there. */
  heldOffsets(): Map<string, number> {
    const heldMin = new Map<string, number>();
    for (const h of this.held.values()) heldMin.set(h.entry.file, Math.min(heldMin.get(h.entry.file) ?? Infinity, h.entry.lineOffset));
    return heldMin;
  }
}
