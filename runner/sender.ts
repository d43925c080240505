// The daemon's spool sender (spec: Runner connection, "Runner spool"): sends the spooled events in
// `events` frames and deletes them once acknowledged.
//   1. pump: while fewer than MAX_IN_FLIGHT batches wait for their ack and the connection is ready, take a
//      batch from the spool (never a source that a batch in flight holds: spool.ts) and send it, at most
//      EVENTS_FRAMES_PER_SECOND frames a second;
//   2. ack: the acknowledged ids leave the spool; a batch fully acknowledged frees its place;
//   3. a batch not acknowledged within ACK_TIMEOUT_MS (or soon after a server error frame) is released and
//      sent again — the server stores by id, so a resend is stored once;
//   4. the connection dropped: every batch in flight goes back to the spool, to be sent on the next one.
// Events appended in this process wake the sender; files other processes add are noticed by watching the
// spool directory, with a periodic rescan as fallback. A process that dies loses nothing: what was not
// acknowledged is still in the spool at the next start.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readdirSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { tokenBucket } from '../protocol/bucket.ts';
import { MAX_BATCH, RUNNER_FRAMES_PER_SECOND } from '../protocol/frames.ts';
import type { RunnerFrame } from '../protocol/frames.ts';
import { log } from './log.ts';
import type { Spool } from './spool.ts';

/** An events batch not acknowledged within this is sent again (the server stores by id). */
const ACK_TIMEOUT_MS = 60_000;
/** The server said it could not store a frame, or dropped frames over its rate: retry the batches after this. */
const RETRY_AFTER_ERROR_MS = 5_000;
/** The spool directory is rescanned this often besides file-system notifications. */
const RESCAN_MS = 10_000;
/** Events batches sent and not yet acknowledged, at most (never two with the same source: see spool.ts). */
export const MAX_IN_FLIGHT = 4;
/**
 * Events frames per second on average, in bursts of up to EVENTS_FRAMES_BURST: half of what the hub
 * accepts from a runner (RUNNER_FRAMES_PER_SECOND; it drops the rest), leaving the other half to command
 * results and terminal output. Without it, a steady stream of appends — an agent emitting 1,000 events a
 * second — becomes one small frame per append and trips the hub's bound. Events that arrive while the
 * bucket is empty wait for the next token (20 ms at most) and go in that frame together; a drain of a
 * full spool is not slowed (50 frames of MAX_BATCH events a second is 25,000 events a second).
 */
export const EVENTS_FRAMES_PER_SECOND = RUNNER_FRAMES_PER_SECOND / 2;
export const EVENTS_FRAMES_BURST = 20;
/** Spool directory notifications: rescan this long after the last one, and at most this long after the first. */
const DEBOUNCE_MS = 50;
const MAX_WAIT_MS = 200;

interface Batch {
  ids: Set<string>;
  sources: Set<string>;
  timer?: NodeJS.Timeout;
}

export interface SenderLink {
  /** The connection is open and welcomed. */
  isReady: () => boolean;
  /** Send a frame; false when the connection is not open. */
  send: (frame: RunnerFrame) => boolean;
}

export class SpoolSender {
  private readonly batches = new Set<Batch>();
  private woken = false;
  private readonly eventsFrames = tokenBucket(EVENTS_FRAMES_PER_SECOND, EVENTS_FRAMES_BURST, () => process.uptime() * 1000);
  /** The pump, held back until the bucket has a token again. */
  private pumpTimer?: NodeJS.Timeout;
  private rescanTimer?: NodeJS.Timeout;
  private watcher?: FSWatcher;
  private stopped = false;

  constructor(
    private readonly spool: Spool,
    private readonly link: SenderLink,
  ) {}

  stop(): void {
    this.stopped = true;
    for (const batch of this.batches) clearTimeout(batch.timer);
    clearTimeout(this.pumpTimer);
    clearInterval(this.rescanTimer);
    this.watcher?.close();
  }

  /** Send what the spool holds, up to MAX_IN_FLIGHT batches. */
  pump(): void {
    while (this.batches.size < MAX_IN_FLIGHT && this.link.isReady()) {
      const wait = this.eventsFrames.waitMs();
      if (wait > 0) {
        this.pumpTimer ??= setTimeout(() => {
          this.pumpTimer = undefined;
          if (!this.stopped) this.pump();
        }, Math.ceil(wait));
        return;
      }
      const busy = new Set<string>();
      for (const b of this.batches) for (const s of b.sources) busy.add(s);
      const events = this.spool.takeBatch(MAX_BATCH, busy);
      if (events.length === 0) return;
      this.eventsFrames.take();
      if (!this.link.send({ type: 'events', events })) return this.dropBatches();
      const batch: Batch = { ids: new Set(events.map((e) => e.id)), sources: new Set(events.map((e) => e.source)) };
      this.batches.add(batch);
      this.armAckTimer(batch, ACK_TIMEOUT_MS);
    }
  }

  /** Appends in this process wake the sender once per turn of the event loop. */
  wake(): void {
    if (this.woken) return;
    this.woken = true;
    setImmediate(() => {
      this.woken = false;
      if (!this.stopped) this.pump();
    });
  }

  private armAckTimer(batch: Batch, ms: number): void {
    clearTimeout(batch.timer);
    batch.timer = setTimeout(() => {
      log.warn('events batch not acknowledged; sending it again');
      this.batches.delete(batch);
      this.spool.release(batch.ids);
      this.pump();
    }, ms);
  }

  /** The frame that failed (or was dropped as over the server's frame rate) is not named: every batch
   *  still waiting is retried soon instead of after the ack timeout (a resend is stored once). */
  retrySoon(): void {
    for (const batch of this.batches) this.armAckTimer(batch, RETRY_AFTER_ERROR_MS);
  }

  onAck(ids: string[]): void {
    this.spool.ack(ids);
    for (const batch of this.batches) {
      for (const id of ids) batch.ids.delete(id);
      if (batch.ids.size === 0) {
        clearTimeout(batch.timer);
        this.batches.delete(batch);
      }
    }
    this.pump();
  }

  /** The connection dropped (or is new): what was in flight goes back to the spool. */
  dropBatches(): void {
    for (const batch of this.batches) clearTimeout(batch.timer);
    this.batches.clear();
    this.spool.requeue();
  }

  /**
   * Other processes (`svc-runner spool-append`, commands) add files: notice them by watching, with a
   * rescan as fallback. The notifications are debounced (DEBOUNCE_MS after the last one) but never
   * held longer than MAX_WAIT_MS, so a steady stream of changes is still picked up.
   */
  watchSpool(): void {
    let pending: NodeJS.Timeout | undefined;
    let firstAt = 0;
    const rescan = () => {
      clearTimeout(pending);
      pending = undefined;
      this.spool.scan();
      this.pump();
    };
    try {
      this.watcher = watch(this.spool.dir, (_event, name) => {
        if (typeof name === 'string' && name.startsWith('.')) return; // temp files: the rename follows
        const now = Date.now();
        if (pending === undefined) firstAt = now;
        clearTimeout(pending);
        pending = setTimeout(rescan, Math.max(0, Math.min(DEBOUNCE_MS, firstAt + MAX_WAIT_MS - now)));
      });
      this.watcher.on('error', () => {});
    } catch {
      // no notifications on this file system: the periodic rescan covers it
    }
    this.rescanTimer = setInterval(rescan, RESCAN_MS);
  }

  /** Temp files of writes that a crash interrupted are incomplete by construction: remove them. */
  cleanTemp(): void {
    for (const name of readdirSync(this.spool.dir)) {
      if (!name.endsWith('.tmp')) continue;
      const p = join(this.spool.dir, name);
      try {
        if (Date.now() - statSync(p).mtimeMs > 60_000) unlinkSync(p);
      } catch {}
    }
  }
}
