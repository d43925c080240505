// Terminal channels between a runner's socket and a browser's (terminal.attach; the browser side is
// terminal.ts). When both sockets are held by this process, frames pass in memory. When they are held by
// different processes (replicas behind a balancer), they travel as NOTIFYs on `svc_term`, which every
// process hears; the one holding the browser acts on o(utput) and x (exit), the one holding the runner on
// i(nput), z (resize) and q (close). A NOTIFY payload stays under PostgreSQL's 8000 bytes: data goes in
// pieces of TERM_CHUNK characters, in order (one NOTIFY after another).
import type { Db } from '../lib/db/index.ts';
import type { ServerFrame } from '../../protocol/frames.ts';
import type { Logger } from '../lib/log.ts';
import type { RunnerSockets, TermFrame } from './socket.ts';
import type { TermInput } from '../lib/context.ts';
import { parseNotice } from '../lib/notice.ts';

const TERM = 'svc_term';
/**
 * Characters of terminal data per NOTIFY: a payload must stay under PostgreSQL's 8000 bytes, and JSON may
 * write one character as up to 6 (`\u001b`), so 1000 characters and the envelope always fit.
 */
const TERM_CHUNK = 1000;

/** A terminal frame between processes: o(utput) and x (exit) toward the browser's process; i(nput), z (resize) and q (close) toward the runner's. */
type TermNotice =
  | { d: 'o'; c: string; r: string; data: string }
  | { d: 'x'; c: string; r: string; reason: string }
  | { d: 'i'; c: string; r: string; data: string }
  | { d: 'z'; c: string; r: string; cols: number; rows: number }
  | { d: 'q'; c: string; r: string };
export type { TermInput };

/** Split a string into pieces of at most `n` UTF-16 units without cutting a surrogate pair. */
function chunks(text: string, n: number): string[] {
  if (text.length <= n) return [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let end = Math.min(i + n, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

export class TerminalChannels {
  /** Open terminal channels (terminal.attach) whose browser this process holds: runner frames go to `onFrame`. */
  private readonly terminals = new Map<string, { runnerId: string; onFrame: (frame: TermFrame) => void }>();
  /** Channels of runners held here whose browser is on another process (their output was published): channel → runner. */
  private readonly remoteTerms = new Map<string, string>();
  /** Channels closed here lately: output still on its way for them is dropped, not published for other processes. */
  private readonly endedHere = new Set<string>();
  /** Terminal NOTIFYs leave one after another, so they commit, and arrive, in the order they were sent. */
  private termQueue: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    private readonly sockets: RunnerSockets,
  ) {}

  listen(): Promise<() => Promise<void>> {
    return this.db.listen(TERM, (p) => this.onTermNotice(p));
  }

  /** Runners with a terminal relayed through this process (the rebalancer leaves them be). */
  busyRunners(): Set<string> {
    return new Set([...[...this.terminals.values()].map((t) => t.runnerId), ...this.remoteTerms.values()]);
  }

  /** Receive a terminal channel's frames from this runner until the returned function is called. */
  open(runnerId: string, channel: string, onFrame: (frame: TermFrame) => void): () => void {
    this.terminals.set(channel, { runnerId, onFrame });
    return () => {
      if (!this.terminals.delete(channel)) return;
      this.endedHere.add(channel);
      if (this.endedHere.size > 1000) this.endedHere.delete(this.endedHere.values().next().value!);
    };
  }

  /**
   * A browser's terminal frame for a runner: sent on its socket when held here, else published for the
   * process that holds it (which the attach command reached through runner_commands).
   */
  send(runnerId: string, frame: TermInput): void {
    if (this.sockets.sendTo(runnerId, frame)) return;
    if (frame.type === 'term.input') for (const data of chunks(frame.data, TERM_CHUNK)) this.publish({ d: 'i', c: frame.channel, r: runnerId, data });
    else if (frame.type === 'term.resize') this.publish({ d: 'z', c: frame.channel, r: runnerId, cols: frame.cols, rows: frame.rows });
    else this.publish({ d: 'q', c: frame.channel, r: runnerId });
  }

  /** A runner's terminal frame: to the browser held here, else published for the process that holds it. */
  fromRunner(runnerId: string, frame: TermFrame): void {
    const sink = this.terminals.get(frame.channel);
    if (sink) {
      if (sink.runnerId === runnerId) sink.onFrame(frame);
    } else if (!this.endedHere.has(frame.channel)) this.relay(runnerId, frame);
  }

  /** The runner's socket here closed: its terminals cannot go on; each browser relaying one is told. */
  runnerGone(runnerId: string): void {
    for (const [channel, sink] of [...this.terminals]) {
      if (sink.runnerId !== runnerId) continue;
      this.terminals.delete(channel);
      sink.onFrame({ type: 'term.exit', channel, reason: 'the runner disconnected' });
    }
    for (const [channel, held] of [...this.remoteTerms]) {
      if (held !== runnerId) continue;
      this.remoteTerms.delete(channel);
      this.publish({ d: 'x', c: channel, r: runnerId, reason: 'the runner disconnected' });
    }
  }

  /** A runner's terminal frame whose browser is not held here: published for the process that holds it. */
  private relay(runnerId: string, frame: TermFrame): void {
    if (frame.type === 'term.output') {
      this.remoteTerms.set(frame.channel, runnerId);
      for (const data of chunks(frame.data, TERM_CHUNK)) this.publish({ d: 'o', c: frame.channel, r: runnerId, data });
    } else {
      this.remoteTerms.delete(frame.channel);
      this.publish({ d: 'x', c: frame.channel, r: runnerId, reason: frame.reason });
    }
  }

  private publish(notice: TermNotice): void {
    this.termQueue = this.termQueue
      .then(() => this.db.notify(TERM, JSON.stringify(notice)))
      .catch((err) => this.log.warn('terminal relay: a frame could not be passed to the other server processes', { channel: notice.c, error: err instanceof Error ? err.message : String(err) }));
  }

  /** Every process hears every terminal notice; the one holding the browser (o, x) or the runner (i, z, q) acts on it. */
  private onTermNotice(payload: string): void {
    const n = parseNotice<TermNotice>(payload);
    if (n === undefined) return;
    if (n.d === 'o' || n.d === 'x') {
      const sink = this.terminals.get(n.c);
      if (!sink || sink.runnerId !== n.r) return;
      sink.onFrame(n.d === 'o' ? { type: 'term.output', channel: n.c, data: n.data } : { type: 'term.exit', channel: n.c, reason: n.reason });
      return;
    }
    if (!this.sockets.get(n.r)) return;
    if (n.d === 'i') this.sockets.sendTo(n.r, { type: 'term.input', channel: n.c, data: n.data });
    else if (n.d === 'z') this.sockets.sendTo(n.r, { type: 'term.resize', channel: n.c, cols: n.cols, rows: n.rows });
    else {
      this.remoteTerms.delete(n.c);
      this.sockets.sendTo(n.r, { type: 'term.close', channel: n.c });
    }
  }
}
