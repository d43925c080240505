// `svc-runner run` (spec: Runner command line, Runner connection, Runner exit codes): load the config,
// refuse when not paired, take the lock, connect, flush the spool and answer commands, until a signal
// (exit 0) or a final close 4400/4401/4409 (exit 78). Each start spools a `runner.started` event.
// The spool is sent by runner/sender.ts; this file wires the parts and answers the server's frames.
import { hostname } from 'node:os';
import { isCommandName } from '../protocol/commands.ts';
import { CLOSE, MAX_FRAME_BYTES } from '../protocol/frames.ts';
import type { RunnerFrame, ServerFrame } from '../protocol/frames.ts';
import { VERSION } from '../protocol/version.ts';
import { capabilities, runCommand } from './commands/registry.ts';
import type { CommandContext, CommandResult } from './commands/registry.ts';
import { ConfigError, isPaired, loadConfig, primaryProjects, updateConfig } from './config.ts';
import type { ProjectEntry, RunnerConfig } from './config.ts';
import { Connection } from './connection.ts';
import { DEFAULT_OTLP_PORT, OtlpReceiver, RecentIds, spoolEvents } from './otlp.ts';
import { writeOtlpState } from './otlp/state.ts';
import { CodeHost } from './codehost/poller.ts';
import { openRunPull } from './codehost/publish.ts';
import { Fleet } from './fleet.ts';
import { SkillRuns } from './runs/manager.ts';
import { target } from './host.ts';
import { LockHeld, acquireLock } from './lock.ts';
import type { Lock } from './lock.ts';
import { errorText, log, redact } from './log.ts';
import { configPath, lockPath, spoolDir } from './paths.ts';
import type { Env } from './paths.ts';
import { SpoolSender } from './sender.ts';
import { Spool } from './spool.ts';
import { reportedProfiles } from './profiles.ts';
import { Terminals } from './terminal.ts';
import { Ingest } from './usage/ingest.ts';
import { serveLocal } from './local.ts';
import { localRequestHandler } from './commands/pr.ts';

const MAX_RUNNING_COMMANDS = 32;
/** How often the usable profiles are re-read (an agent CLI installed or signed in meanwhile); SVC_PROFILES_POLL_MS overrides it for tests. */
const PROFILES_CHECK_MS = 30_000;

const FINAL_REMEDY: Record<number, string> = {
  [CLOSE.protocolMismatch]: 'protocol mismatch: upgrade the side that is behind (runner or server), then start the runner again',
  [CLOSE.unauthorized]: 'the runner token is invalid or was revoked: pair this machine again (svc-runner pair)',
  [CLOSE.replaced]: 'a newer pairing of this runner connected: this machine was replaced; pair it again to use it',
};

export async function runDaemon(env: Env = process.env, err: { write: (s: string) => unknown } = process.stderr): Promise<number> {
  const path = configPath(env);
  let config: RunnerConfig;
  try {
    config = loadConfig(path).config;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    err.write(`svc-runner: ${e.message}\n`);
    return 1;
  }
  if (!isPaired(config)) {
    err.write(`svc-runner: this machine is not paired (no server, runner id and token in ${path}).\nRun: svc-runner pair --server <api-origin> --code <XXXX-XXXX>\n`);
    return 1;
  }
  redact(config.token);
  if (config.profiles.length === 0) log.warn('no runtime profiles are configured; agents cannot be started. Run: svc-runner profiles --detect --write');
  let lock: Lock;
  try {
    lock = acquireLock(lockPath(env));
  } catch (e) {
    if (!(e instanceof LockHeld)) throw e;
    err.write(`svc-runner: ${e.message}\n`);
    return 1;
  }
  try {
    return await new Daemon(config, env, path).run();
  } finally {
    lock.release();
  }
}

class Daemon {
  private readonly spool: Spool;
  private readonly conn: Connection;
  private projects: ProjectEntry[];
  private readonly sender: SpoolSender;
  private running = 0;
  private done!: (code: number) => void;
  private readonly ctx: CommandContext;
  private readonly fleet: Fleet;
  private readonly codehost: CodeHost;
  private readonly runs: SkillRuns;
  private readonly terminals: Terminals;
  private readonly ingest: Ingest;
  private otlp?: OtlpReceiver;
  private closeLocal?: () => void;
  private profilesTimer?: NodeJS.Timeout;
  /** The usable profiles last sent on this connection (JSON), so only a change is sent again. */
  private profilesSent: string | null = null;
  /** The running count last sent in a capacity frame on this connection. */
  private capacitySent: number | null = null;
  private stopped = false;
  private readonly otlpSpooled = new RecentIds();

  constructor(
    private readonly config: RunnerConfig & { server: string; runnerId: string; token: string },
    private readonly env: Env,
    private readonly path: string,
  ) {
    this.projects = config.projects;
    this.spool = new Spool(spoolDir(env), config.runnerId, (name, reason) => log.error('spool file unreadable; moved to spool/corrupt', { name, reason }));
    this.sender = new SpoolSender(this.spool, { isReady: () => this.conn.isReady, send: (frame) => this.send(frame) });
    this.spool.onAppend = () => this.sender.wake();
    this.terminals = new Terminals(env, (frame) => this.send(frame));
    this.ingest = new Ingest({ env, config, spool: this.spool, projects: () => this.projects, onSpooled: () => this.pump() });
    // Pool-only entries (watch list `pool: true`) get skill runs and session attribution, nothing more: no
    // code-host polling, `.svc/events.jsonl` tailing or pane watching there (their primary runner does it).
    this.codehost = new CodeHost({ config, env, projects: () => primaryProjects(this.projects), append: (events) => (this.spool.append(events), this.pump()) });
    this.fleet = new Fleet(this.spool, config, env, () => primaryProjects(this.projects));
    this.runs = new SkillRuns(this.spool, config, env, () => this.pump(), (run, patch, report) =>
      openRunPull(this.codehost.adapter(this.projectOf(run.projectId)), this.projectOf(run.projectId).host ? this.codehost.gitlabTokens : this.codehost.tokens, {
        root: run.root,
        repo: this.projectOf(run.projectId).host?.path ?? this.projectOf(run.projectId).repo,
        branch: patch.branch,
        runId: run.runId,
        skill: run.skill,
        profile: config.profiles.find((p) => p.id === run.profileId),
        report,
      }),
      () => this.sendCapacity(),
    );
    this.ctx = { config, env, projects: () => this.projects, startedAt: Date.now(), terminals: this.terminals, ingest: this.ingest, codehost: this.codehost, runs: this.runs };
    this.conn = new Connection({
      server: config.server,
      token: config.token,
      onReady: (welcome) => this.onReady(welcome),
      onFrame: (frame) => this.onFrame(frame),
      onInvalid: (reason, raw) => this.onInvalid(reason, raw),
      onFatal: (code, reason) => {
        log.error(`the server closed the connection for good (${code}${reason ? `: ${reason}` : ''}); not reconnecting`, { remedy: FINAL_REMEDY[code] });
        this.finish(78);
      },
      onDown: (code, reason, retryInMs) => {
        this.sender.dropBatches();
        this.terminals.closeAll(); // their browsers were relayed by the connection that dropped
        log.warn(`connection down (${code}${reason ? `: ${reason}` : ''}); reconnecting in ${(retryInMs / 1000).toFixed(1)} s`);
      },
    });
  }

  run(): Promise<number> {
    const finished = new Promise<number>((resolve) => (this.done = resolve));
    const stop = (signal: string) => {
      log.info(`${signal}: stopping`);
      this.finish(0);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    this.sender.cleanTemp();
    this.spool.scan();
    this.spool.append([{ source: 'runner', kind: 'runner.started', payload: { version: VERSION, target: target(), hostname: hostname(), pid: process.pid, waiting: this.spool.waiting } }]);
    log.info(`svc-runner ${VERSION} starting`, { server: this.config.server, runnerId: this.config.runnerId, spooled: this.spool.waiting, config: this.path });
    this.sender.watchSpool();
    void this.startOtlp();
    // `svc-runner pr-merge` (the orchestrator's merge step) and `pr-create` (a worker's pull request) ask the
    // daemon here: it holds the server's token.
    void serveLocal(this.env, (req) => localRequestHandler(req, this.ctx), (m) => log.warn(m)).then(
      (close) => (this.stopped ? close() : (this.closeLocal = close)),
      (e) => log.warn('the local channel (svc-runner pr-merge) could not start', { error: errorText(e) }),
    );
    this.fleet.start();
    this.codehost.start();
    void this.ingest.start().catch((e) => log.error('session ingest could not start', { error: errorText(e) }));
    void this.runs.start().catch((e) => log.error('skill runs could not be picked up', { error: errorText(e) }));
    this.conn.start();
    const every = Number(this.env.SVC_PROFILES_POLL_MS) >= 50 ? Number(this.env.SVC_PROFILES_POLL_MS) : PROFILES_CHECK_MS;
    this.profilesTimer = setInterval(() => this.sendProfiles(), every);
    this.profilesTimer.unref();
    return finished;
  }

  private finish(code: number): void {
    this.stopped = true;
    this.terminals.closeAll();
    this.conn.stop();
    this.sender.stop();
    clearInterval(this.profilesTimer);
    this.fleet.stop();
    this.codehost.stop();
    this.runs.stop();
    void this.ingest.stop();
    void this.otlp?.close();
    this.closeLocal?.();
    this.done(code);
  }

  /** The local OTLP receiver (spec: Runner local OTLP receiver). A port that cannot be bound is logged
   *  and the daemon goes on without it (spec: Other behaviours). */
  private async startOtlp(): Promise<void> {
    const o = this.config.otlp;
    const saveState = (s: Parameters<typeof writeOtlpState>[1]) => {
      try {
        writeOtlpState(this.env, s);
      } catch (e) {
        log.warn('could not record the OTLP receiver state for `status`', { error: errorText(e) });
      }
    };
    if (o && !o.enabled) {
      log.info('OTLP receiver disabled (otlp.enabled is false)');
      return saveState({ state: 'disabled', port: null, reason: null });
    }
    const port = o?.http ?? DEFAULT_OTLP_PORT;
    const prefix = this.config.runnerId.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
    const receiver = new OtlpReceiver({
      port,
      codexExperimental: o?.codexExperimental ?? false,
      onRequests: (requests) => {
        const events = this.otlpSpooled.unseen(spoolEvents(requests, prefix));
        if (events.length === 0) return;
        this.spool.append(events);
        for (const e of events) this.otlpSpooled.add(e.id);
        this.pump();
      },
    });
    try {
      const bound = await receiver.listen();
      if (this.stopped) return void receiver.close();
      this.otlp = receiver;
      log.info(`OTLP receiver listening on 127.0.0.1:${bound}`, { codexExperimental: o?.codexExperimental ?? false });
      saveState({ state: 'listening', port: bound, reason: null });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const reason = code === 'EADDRINUSE' ? `127.0.0.1:${port} is in use by another program` : `127.0.0.1:${port} cannot be bound (${code ?? errorText(e)})`;
      log.error(`OTLP receiver not started: ${reason}; the runner goes on without it (set otlp.http to a free port, or otlp.enabled to false)`);
      saveState({ state: 'failed', port, reason });
    }
  }

  private onReady(welcome: Extract<ServerFrame, { type: 'welcome' }>): void {
    log.info(`connected to ${this.config.server} as runner ${welcome.runnerId}`, { waiting: this.spool.waiting });
    // hello is our first frame; it follows the welcome so the server is surely listening.
    this.send({ type: 'hello', version: VERSION, target: target(), hostname: hostname().slice(0, 255), capabilities: capabilities(this.config) });
    this.profilesSent = null; // a new connection: the server hears them again
    this.sendProfiles();
    this.capacitySent = null;
    this.sendCapacity();
    this.updateProjects(welcome.projects);
    this.sender.dropBatches();
    this.sender.pump();
  }

  /** The usable runtime profiles (docs/runner.md, "Agent runtimes reported"): after hello, then on change. */
  private sendProfiles(): void {
    if (!this.conn.isReady) return;
    let profiles: ReturnType<typeof reportedProfiles>;
    try {
      profiles = reportedProfiles(this.config.profiles, this.env);
    } catch (e) {
      return log.warn('could not check the runtime profiles', { error: errorText(e) });
    }
    const text = JSON.stringify(profiles);
    if (text === this.profilesSent) return;
    if (this.send({ type: 'profiles', profiles })) this.profilesSent = text;
    if (!profiles.some((p) => p.authenticated)) log.warn('no usable agent runtime: no configured profile has its CLI found and signed in; agents cannot start. Install `claude` or `codex`, sign in, run `svc-runner profiles --detect --write`, then restart the runner');
  }

  /**
   * POOL_CAPABILITY: skills.maxConcurrentRuns and how many runs are starting or running, after hello and
   * whenever that number changes (SkillRuns calls this; only a change is sent). A server older than runner
   * pools answers the frame with an `error` frame (invalid_frame), which onFrame only logs.
   */
  private sendCapacity(): void {
    if (!this.conn.isReady || this.config.disabledCommands.includes('skill.run')) return;
    const frame = { type: 'capacity', maxConcurrentRuns: this.config.skills.maxConcurrentRuns, running: this.runs.running() } as const;
    if (frame.running === this.capacitySent) return;
    if (this.send(frame)) this.capacitySent = frame.running;
  }

  private send(frame: RunnerFrame): boolean {
    return this.conn.send(frame);
  }

  private onFrame(frame: ServerFrame): void {
    switch (frame.type) {
      case 'ack':
        return this.sender.onAck(frame.ids);
      case 'command':
        // App mode: the repository's installation token rides beside the args (memory only, never logged).
        if (frame.codehost) this.codehost.setServerTokens(frame.codehost, false);
        return void this.onCommand(frame.requestId, frame.name, frame.args);
      case 'projects':
        if (frame.codehost) this.codehost.setServerTokens(frame.codehost, true);
        return this.updateProjects(frame.projects);
      case 'error':
        log.warn(`server error frame: ${frame.code}: ${frame.message}`);
        if (frame.code === 'server_error' || frame.code === 'rate_limited') this.sender.retrySoon(); // runner/sender.ts
        return;
      case 'term.input':
        return this.terminals.input(frame.channel, frame.data);
      case 'term.resize':
        return this.terminals.resize(frame.channel, frame.cols, frame.rows);
      case 'term.close':
        return this.terminals.close(frame.channel);
      case 'welcome':
      case 'pong':
        return;
    }
  }

  /** A frame that did not parse. A command we cannot read is still answered, so the caller does not wait. */
  private onInvalid(reason: string, raw: unknown): void {
    log.warn('invalid frame from the server ignored', { reason });
    const r = raw as { type?: unknown; requestId?: unknown; name?: unknown } | null;
    if (r?.type !== 'command' || typeof r.requestId !== 'string' || r.requestId.length > 64) return;
    const known = typeof r.name === 'string' && isCommandName(r.name);
    const error = known ? { code: 'invalid_args', message: reason } : { code: 'unknown_command', message: `the runner does not know this command: ${String(r.name).slice(0, 64)}` };
    this.send({ type: 'result', requestId: r.requestId, ok: false, error });
  }

  /** Answers of recent commands by requestId (REPLAY_CAPABILITY): a command sent again is answered, not run again. */
  private readonly answered = new Map<string, { at: number; frame: Promise<RunnerFrame> }>();

  private async onCommand(requestId: string, name: string, args: unknown): Promise<void> {
    log.debug('command received', { requestId, name }); // a timing point (bench/trigger-agent.mjs); SVC_LOG=debug only
    const seen = this.answered.get(requestId);
    if (seen) {
      log.info(`command ${name} sent again: answering as before`, { requestId });
      if (!this.send(await seen.frame)) log.warn(`command ${name}: the connection dropped before the answer was sent`, { requestId });
      return;
    }
    const now = Date.now();
    for (const [id, a] of this.answered) if (this.answered.size >= 200 || now - a.at > 15 * 60_000) this.answered.delete(id);
    else break;
    let settle!: (f: RunnerFrame) => void;
    this.answered.set(requestId, { at: now, frame: new Promise((r) => (settle = r)) });
    const frame = await this.answer(requestId, name, args);
    settle(frame);
    if (!this.send(frame)) log.warn(`command ${name}: the connection dropped before the answer was sent`, { requestId });
  }

  private async answer(requestId: string, name: string, args: unknown): Promise<RunnerFrame> {
    let result: CommandResult;
    if (this.running >= MAX_RUNNING_COMMANDS) result = { ok: false, error: { code: 'busy', message: `more than ${MAX_RUNNING_COMMANDS} commands are running` } };
    else {
      this.running++;
      try {
        result = await runCommand(name, args, this.ctx);
      } finally {
        this.running--;
      }
    }
    log.info(`command ${name} ${result.ok ? 'ok' : `failed: ${result.error.code}`}`, { requestId });
    let frame: RunnerFrame = result.ok ? { type: 'result', requestId, ok: true, data: result.data } : { type: 'result', requestId, ok: false, error: result.error };
    if (JSON.stringify(frame).length > MAX_FRAME_BYTES) frame = { type: 'result', requestId, ok: false, error: { code: 'failed', message: `${name}: the answer is larger than ${MAX_FRAME_BYTES} bytes` } };
    return frame;
  }

  /** A run's project entry (an empty one when it left the watch list: no code host then). */
  private projectOf(id: string): ProjectEntry {
    return this.projects.find((p) => p.id === id) ?? { id, root: '' };
  }

  private updateProjects(projects: ProjectEntry[]): void {
    if (JSON.stringify(projects) === JSON.stringify(this.projects)) return;
    this.projects = projects;
    this.fleet.update();
    this.ingest.projectsChanged();
    try {
      updateConfig(this.path, (raw) => void (raw.projects = projects));
      log.info('project watch list updated', { projects: projects.length });
    } catch (e) {
      log.error('could not save the project watch list to runner.json; using it in memory', { error: errorText(e) });
    }
  }

  /** Send what the spool holds (runner/sender.ts). */
  private pump(): void {
    this.sender.pump();
  }
}
