// The runner hub (spec: Runner connection; DESIGN §3): what the rest of the server uses to reach runners,
// put together from its parts, each in its own file:
//   socket.ts             the `/runner` WebSocket: accept, frames, heartbeat, presence
//   control.ts            `svc_runner_ctl`: close or update a runner's socket on whichever process holds it
//   commands.ts           `runner_commands`: a command from any process, its answer, redelivery
//   terminal-channels.ts  terminal.attach frames between a runner's socket and a browser's, across processes
//   rebalance.ts          runner sockets kept spread over the replicas
//   ../events/ingest.ts   the events a runner sends: stored, then fed to the sinks (events/sinks.ts)
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { CommandName } from '../../protocol/commands.ts';
import { CODEHOST_TOKENS_CAPABILITY, REPLAY_CAPABILITY } from '../../protocol/frames.ts';
import { AppTokenSource } from '../codehost/app-mode.ts';
import type { AppDeps } from '../codehost/app-token.ts';
import type { RunnerEvent, ServerFrame } from '../../protocol/frames.ts';
import { refreshAnswered } from '../codehost/queue.ts';
import type { Db } from '../lib/db/index.ts';
import type { Logger } from '../lib/log.ts';
import { CommandRelay } from './commands.ts';
import type { CommandOutcome } from './commands.ts';
import { RunnerControl } from './control.ts';
import { Rebalancer } from './rebalance.ts';
import { RunnerSockets } from './socket.ts';
import type { TermFrame } from './socket.ts';
import { TerminalChannels } from './terminal-channels.ts';
import type { TermInput } from './terminal-channels.ts';
import { AppTokenRefresher } from './watch-list.ts';

export type { CommandOutcome } from './commands.ts';

export class Hub {
  readonly instance = randomUUID();
  /** Called once a runner's hello is stored (its capabilities known): work that needs the runner online. */
  onHello?: (runnerId: string) => Promise<unknown>;
  /** Called once a runner's batch of events is stored (cost/caps.ts: a unit may have reached its cap); not awaited. */
  onIngested?: (runnerId: string, events: RunnerEvent[]) => Promise<unknown>;
  /** Called when a runner reported its capacity (runs/pool.ts: a place may be free). */
  onCapacity?: (runnerId: string) => void;
  private readonly sockets: RunnerSockets;
  private readonly control: RunnerControl;
  private readonly commands: CommandRelay;
  private readonly terminals: TerminalChannels;
  private rebalancer?: Rebalancer;
  private unlisten: (() => Promise<void>)[] = [];
  /** App mode (docs/github-app.md): the installation tokens code-host commands and watch lists carry. */
  readonly appTokens?: AppTokenSource;
  private readonly refresher?: AppTokenRefresher;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    app?: Pick<AppDeps, 'key' | 'clock'>,
  ) {
    if (app) {
      this.appTokens = new AppTokenSource({ db, key: app.key, clock: app.clock, log: log.child({ area: 'github-app' }) });
      this.refresher = new AppTokenRefresher({
        db,
        log,
        tokens: this.appTokens,
        now: () => app.clock.now(),
        held: () => this.sockets.heldIds().map((id) => ({ id, codehost: this.sockets.get(id)?.codehost ?? false })),
        send: (runnerId, frame) => this.sockets.sendTo(runnerId, frame),
      });
    }
    this.sockets = new RunnerSockets(db, log, this.instance, {
      connected: (conn) => this.control.announce(conn),
      hello: async (conn, capabilities) => {
        // A runner that takes App tokens gets its watch list with them (socket.ts sent it without); not
        // awaited: minting may wait on GitHub, and the commands still unanswered must not wait with it.
        if (this.refresher && capabilities.includes(CODEHOST_TOKENS_CAPABILITY)) {
          void this.refresher
            .frame(conn.runnerId, true)
            .then((frame) => this.sockets.send(conn, frame))
            .catch((err) => this.log.warn('could not send the watch list with App tokens', { runnerId: conn.runnerId, error: err instanceof Error ? err.message : String(err) }));
        }
        await this.commands.sendUnanswered(conn, capabilities.includes(REPLAY_CAPABILITY));
        // Not awaited: it may send commands, whose answers come as frames on this very socket.
        if (this.onHello) void this.onHello(conn.runnerId).catch((err) => this.log.error('hello follow-up failed', { runnerId: conn.runnerId, error: err instanceof Error ? err.message : String(err) }));
      },
      // An issues.refresh answer also replaces the project's issue queue (codehost/queue.ts).
      result: (runnerId, frame) => this.commands.onResult(runnerId, frame).then(() => (frame.ok ? refreshAnswered(db, log, runnerId, frame.requestId) : undefined)),
      capacity: (runnerId) => this.onCapacity?.(runnerId),
      ingested: (runnerId, events) => {
        if (this.onIngested) void this.onIngested(runnerId, events).catch((err) => this.log.error('after-ingest work failed', { runnerId, error: err instanceof Error ? err.message : String(err) }));
      },
      terminal: (runnerId, frame) => this.terminals.fromRunner(runnerId, frame),
      closed: (runnerId) => this.terminals.runnerGone(runnerId),
    });
    const refresher = this.refresher;
    this.control = new RunnerControl(db, log, this.sockets, refresher && ((runnerId, withRepo) => refresher.frame(runnerId, withRepo)));
    this.commands = new CommandRelay(db, log, this.sockets, this.appTokens);
    this.terminals = new TerminalChannels(db, log, this.sockets);
  }

  async start(): Promise<void> {
    // After a re-subscribe (the LISTEN connection came back: PostgreSQL restarted) each channel re-reads
    // what a notice missed meanwhile would have said, rather than leaving it to a timeout.
    this.unlisten = await Promise.all([this.control.listen(), ...this.commands.listen(), this.terminals.listen()]);
    this.sockets.startHeartbeat();
    await this.refresher?.start();
    // Runner sockets kept spread over the replicas (rebalance.ts): some of ours move after a replica joins.
    this.rebalancer = new Rebalancer({ db: this.db, log: this.log, instance: this.instance, holder: this });
    await this.rebalancer.start();
  }

  async stop(): Promise<void> {
    this.sockets.stopHeartbeat();
    await this.refresher?.stop();
    await this.rebalancer?.stop();
    // 1012 (service restart): the runners come back from their first backoff step, not a long one.
    await this.sockets.stop();
    await Promise.all(this.unlisten.map((u) => u().catch(() => {})));
  }

  /** The runners whose sockets this process holds; `busy` when it relays a terminal of theirs. */
  heldRunners(): { id: string; busy: boolean }[] {
    const busy = this.terminals.busyRunners();
    return this.sockets.heldIds().map((id) => ({ id, busy: busy.has(id) }));
  }

  /** Ask a runner held here to reconnect (1012, as on a restart): it is back within about 1 s, wherever the balancer puts it. */
  release(runnerId: string): void {
    this.sockets.release(runnerId, 'moving to another server process');
  }

  isConnectedHere(runnerId: string): boolean {
    return this.sockets.get(runnerId) !== undefined;
  }

  /** Whether the runner is connected to some server process (and was seen within a minute). */
  isOnline(runnerId: string): Promise<boolean> {
    return this.sockets.isOnline(runnerId);
  }

  /** Send a frame to a runner whose socket this process holds; false when it does not. */
  sendToRunner(runnerId: string, frame: ServerFrame): boolean {
    return this.sockets.sendTo(runnerId, frame);
  }

  /** Node's `upgrade` event for /runner. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.sockets.handleUpgrade(req, socket, head);
  }

  /** Close a runner's socket wherever it is held: 4401 when revoked, 4409 when re-paired. */
  disconnect(runnerId: string, code: number): Promise<void> {
    return this.control.disconnect(runnerId, code);
  }

  /** Tell a runner its watch list changed (project created, moved or deleted). */
  projectsChanged(runnerId: string | null): Promise<void> {
    return this.control.projectsChanged(runnerId);
  }

  /** Receive a terminal channel's frames from this runner until the returned function is called. */
  openTerminal(runnerId: string, channel: string, onFrame: (frame: TermFrame) => void): () => void {
    return this.terminals.open(runnerId, channel, onFrame);
  }

  /** A browser's terminal frame for a runner, wherever its socket is held. */
  sendTerminal(runnerId: string, frame: TermInput): void {
    this.terminals.send(runnerId, frame);
  }

  /** Send a command and wait up to its timeout for the answer, from any API process. */
  command(runnerId: string, name: CommandName, args: unknown, userId: string | null): Promise<CommandOutcome> {
    return this.commands.command(runnerId, name, args, userId);
  }
}
