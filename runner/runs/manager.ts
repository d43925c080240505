// Skill runs in the daemon (docs/skill-runs.md): the queue (at most skills.maxConcurrentRuns starting
// or running; the rest wait as `queued`, oldest first), launching each run in tmux session
// svc-run-<runId> executing `svc-runner exec-run <runDir>`, following its state.json and stream.jsonl,
// cancelling, and finishing it (report, patch, result) with its events spooled to the server.
//
// The files in runs/<runId>/ are the truth, so a restarted daemon picks every run up again: queued runs
// stay queued, a run whose tmux session is alive is followed again, and one whose session is gone
// without an exit record is marked failed — no run stays `running` forever. A run also cannot outlive
// its timeout: exec-run enforces it, and the daemon kills a session still there well after it.
import { existsSync, mkdirSync, readdirSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { RunnerConfig } from '../config.ts';
import { CommandError } from '../errors.ts';
import { errorText, log } from '../log.ts';
import type { Env } from '../paths.ts';
import type { Spool, NewEvent } from '../spool.ts';
import { killSession, listSessions, newSession, sessionName } from '../tmux.ts';
import { secondMs, STOP_GRACE_MS } from './exec.ts';
import { FILES, isFinal, newRunId, readExit, readJson, readRun, readState, runDir, runsDir, writeJson, writeState } from './files.ts';
import type { RunFile, RunState, StateFile } from './files.ts';
import { finishRun, resendResult, resultFile } from './finish.ts';
import type { Publish } from './finish.ts';
import { buildRunFile, execRunArgv, sessionEnv } from './prepare.ts';
import type { RunRequest } from './prepare.ts';
import { MAX_PROGRESS_LINES, PROGRESS_BATCH, progressEvent, stateEvent } from './events.ts';
import { readNewLines } from './stream.ts';
import type { Chosen } from '../launch.ts';
import { createRunWorktree } from './worktree.ts';
import { killAgentGroup, knownRun, pidAlive, runAnswer } from './answer.ts';
import type { Submitted } from './answer.ts';

/** A session gone this long (and its exec-run dead) without a final state: the run is lost. */
const LOST_GRACE_MS = 3000;
const LOST_GRACE_MAX_MS = STOP_GRACE_MS + 10_000;
/** How long skill.run waits for exec-run to report the agent started. */
const START_WAIT_MS = 10_000;

interface Tracked {
  dir: string;
  run: RunFile;
  state: StateFile;
  offset: number;
  partial: string;
  seq: number;
  goneSince: number | null;
  watcher?: FSWatcher;
}

export class SkillRuns {
  private readonly runs = new Map<string, Tracked>();
  /** skill.run with a server-chosen runId still being accepted: a resend waits for the same answer. */
  private readonly accepting = new Map<string, Promise<Submitted>>();
  /** Runs whose worktree and session are being made (launch), and runs whose result is being made (finish). */
  private readonly launching = new Map<string, Promise<void>>();
  private readonly finishing = new Map<string, Promise<void>>();
  private lastRunning = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private kickTimer?: NodeJS.Timeout;
  private lastMs = 0;
  private ticking = false;
  private stopped = false;

  constructor(
    private readonly spool: Spool,
    private readonly config: RunnerConfig,
    private readonly env: Env,
    private readonly onSpooled: () => void = () => {},
    private readonly publish?: Publish,
    /** The number of starting+running runs changed (the daemon's `capacity` frame, POOL_CAPABILITY). */
    private readonly onRunningChanged: () => void = () => {},
  ) {}

  async start(): Promise<void> {
    mkdirSync(runsDir(this.env), { recursive: true, mode: 0o700 });
    await this.serial(() => this.recover());
    const ms = Number(this.env.SVC_RUNS_POLL_MS) >= 10 ? Number(this.env.SVC_RUNS_POLL_MS) : 1000;
    this.timer = setInterval(() => void this.tick(true), ms);
    this.timer.unref();
    void this.tick(true);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.kickTimer);
    for (const t of this.runs.values()) t.watcher?.close();
  }

  /** One change at a time: launching, finishing and cancelling never interleave. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => {});
    return next;
  }

  private emit(events: NewEvent[]): void {
    // Every state change is spooled through here (and a finished run leaves `runs` before its final
    // events), so this is where a change in the starting+running count shows; only a change is told.
    const running = this.active();
    if (running !== this.lastRunning) {
      this.lastRunning = running;
      this.onRunningChanged();
    }
    try {
      this.spool.append(events);
      this.onSpooled();
    } catch (e) {
      log.error('could not spool skill run events', { kinds: events.map((e) => e.kind), error: errorText(e) });
    }
  }

  private setState(t: Tracked, s: Omit<StateFile, 'at' | 'runId'>): StateFile {
    t.state = writeState(t.dir, { runId: t.run.runId, ...s });
    return t.state;
  }

  private track(dir: string, run: RunFile, state: StateFile): Tracked {
    const t: Tracked = { dir, run, state, offset: 0, partial: '', seq: 0, goneSince: null };
    this.runs.set(run.runId, t);
    return t;
  }

  private watchDir(t: Tracked): void {
    try {
      t.watcher = watch(t.dir, () => this.kick());
      t.watcher.on('error', () => {});
    } catch {}
  }

  private kick(): void {
    if (this.kickTimer || this.stopped) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      void this.tick(false);
    }, 20);
  }

  // ---- the queue ----

  /** Runs starting or running now (queued ones wait for a place and are not counted). */
  running(): number {
    return this.active();
  }

  private active = () => [...this.runs.values()].filter((t) => t.state.state === 'starting' || t.state.state === 'running').length;
  private queued = () => [...this.runs.values()].filter((t) => t.state.state === 'queued').sort((a, b) => (a.run.runId < b.run.runId ? -1 : 1));

  /**
   * Accept a run: queued, then started at once when a slot is free. Answers once it started or queued.
   * `runId` is a pool run's id chosen by the server (POOL_CAPABILITY); the server may send the same
   * skill.run again (a lost answer, a reconnect), so a run that already exists under that id is answered
   * as it is now and never started twice. Without it the runner picks the id.
   */
  async submit(req: Omit<RunRequest, 'runId'> & { runId?: string }, chosen: Chosen): Promise<Submitted> {
    if (!req.runId) {
      const ms = (this.lastMs = Math.max(Date.now(), this.lastMs + 1));
      return this.accept(req, chosen, newRunId(ms));
    }
    // No await before `accepting` is set: two skill.run with this id arriving together see each other.
    const runId = req.runId;
    const pending = this.accepting.get(runId);
    if (pending) return pending;
    const known = knownRun(this.env, runId, req.projectId);
    if (known) return this.answerFor(runId, known);
    const accepted = this.accept(req, chosen, runId).finally(() => this.accepting.delete(runId));
    this.accepting.set(runId, accepted);
    return accepted;
  }

  /**
   * The answer to a skill.run whose `runId` this runner already has (being accepted, or its run file
   * written): the run as it stands, with what it was started with. Null when the id is new here.
   */
  async existing(runId: string, projectId: string): Promise<(Submitted & { profileId: string; runtime: string; timeoutSec: number }) | null> {
    const pending = this.accepting.get(runId);
    if (pending) await pending.catch(() => {});
    const run = knownRun(this.env, runId, projectId);
    return run ? { ...this.answerFor(runId, run), profileId: run.profileId, runtime: run.runtime, timeoutSec: run.timeoutSec } : null;
  }

  /** A run's answer as it stands (state.json is the truth; the queue gives the position). */
  private answerFor(runId: string, run: RunFile, fallback?: StateFile): Submitted {
    return runAnswer(readState(runDir(this.env, runId)) ?? fallback ?? { runId, state: 'queued' as const, at: '' }, run, this.queued().findIndex((q) => q.run.runId === runId));
  }

  private async accept(req: Omit<RunRequest, 'runId'> & { runId?: string }, chosen: Chosen, runId: string): Promise<Submitted> {
    const dir = runDir(this.env, runId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const run = buildRunFile(chosen, this.config, { ...req, runId }, this.env);
    writeJson(join(dir, FILES.run), run);
    const t = this.track(dir, run, writeState(dir, { runId, state: 'queued' }));
    this.emit([stateEvent(run, t.state)]);
    await this.serial(() => this.fill());
    if (t.state.state === 'starting') {
      const until = Date.now() + START_WAIT_MS;
      while (Date.now() < until && readState(dir)?.state === 'starting') await new Promise((r) => setTimeout(r, 10));
      void this.tick(false);
    }
    return this.answerFor(runId, run, t.state);
  }

  private async fill(): Promise<void> {
    for (let next = this.queued()[0]; next && this.active() < this.config.skills.maxConcurrentRuns && !this.stopped; next = this.queued()[0]) this.launch(next);
  }

  /** The run takes its slot (`starting`) in queue order; its worktree and session are made off the serial chain, so
   *  one run's git work never holds up another's start or finish (docs/performance.md, "A trigger call to a working agent"). */
  private launch(t: Tracked): void {
    const runId = t.run.runId;
    this.emit([stateEvent(t.run, this.setState(t, { state: 'starting' }))]);
    log.debug('skill run starting', { runId }); // timing points of bench/trigger-agent.mjs (SVC_LOG=debug)
    const made = (async () => {
      if (t.run.worktree && !t.run.worktree.base) {
        const base = await createRunWorktree(t.run.root, t.run.worktree.path, t.run.worktree.branch, this.config.skills.spareWorktrees);
        t.run = { ...t.run, worktree: { ...t.run.worktree, base } };
        writeJson(join(t.dir, FILES.run), t.run);
        log.debug('skill run worktree made', { runId });
      }
      this.watchDir(t);
      await this.newRunSession(t);
    })().catch(async (e) => {
      log.warn('a skill run could not start', { runId, error: errorText(e) });
      await this.serial(async () => {
        if (this.runs.get(runId) === t) await this.finish(t, this.setState(t, { state: 'failed', error: `the run could not start: ${errorText(e)}` }));
      });
    });
    this.launching.set(runId, made.finally(() => this.launching.delete(runId)));
  }

  /** tmux exits when its last session ends; a new-session that reaches it just then fails: try again. */
  private async newRunSession(t: Tracked, tries = 4): Promise<void> {
    try {
      await newSession(this.env, { name: sessionName.run(t.run.runId), cwd: t.run.cwd, argv: execRunArgv(t.dir), env: sessionEnv(this.env), options: { '@svc_run': t.run.runId } });
    } catch (e) {
      if (tries <= 1 || !/server exited unexpectedly|lost server|no server running/i.test(errorText(e))) throw e;
      await new Promise((r) => setTimeout(r, 50));
      await this.newRunSession(t, tries - 1);
    }
  }

  // ---- following runs ----

  private async tick(full: boolean): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      // tmux is asked only while runs live (no client spawned every second on an idle runner).
      const live = [...this.runs.values()].some((t) => t.state.state !== 'queued');
      const sessions = full && live ? await this.liveSessions() : null;
      for (const t of [...this.runs.values()]) {
        if (t.state.state === 'queued') continue;
        this.readProgress(t);
        const s = readState(t.dir);
        if (s && isFinal(s.state)) {
          await this.serial(() => this.finish(t, s));
          continue;
        }
        if (s && s.state !== t.state.state) {
          t.state = s;
          this.emit([stateEvent(t.run, s)]);
        }
        if (sessions) await this.checkAlive(t, sessions);
      }
      await this.serial(() => this.fill());
    } catch (e) {
      log.error('skill runs: a check failed', { error: errorText(e) });
    } finally {
      this.ticking = false;
    }
  }

  /** Names of the live svc-run-* sessions; none when tmux is missing; null when tmux failed. */
  private async liveSessions(): Promise<Set<string> | null> {
    try {
      return new Set((await listSessions(this.env)).filter((s) => !s.paneDead).map((s) => s.name));
    } catch (e) {
      if (e instanceof CommandError && e.code === 'tmux_not_found') return new Set();
      return null;
    }
  }

  private async checkAlive(t: Tracked, sessions: Set<string>): Promise<void> {
    if (this.launching.has(t.run.runId)) return; // its session is not made yet
    const now = Date.now();
    const name = sessionName.run(t.run.runId);
    if (sessions.has(name)) {
      t.goneSince = null;
      const started = Date.parse(t.state.startedAt ?? '');
      const limit = t.run.timeoutSec * secondMs(this.env) + STOP_GRACE_MS + 30_000;
      if (t.state.state === 'running' && now - started > limit) {
        // exec-run did not stop the agent at its timeout: stop it here.
        await killSession(this.env, name).catch(() => {});
        killAgentGroup(t.state.agentPid, t.run.runId);
        await this.serial(() => this.finish(t, this.setState(t, { ...t.state, state: 'timed_out', error: `the run passed its timeout of ${t.run.timeoutSec} s; its session was killed` })));
      }
      return;
    }
    t.goneSince ??= now;
    const gone = now - t.goneSince;
    if (gone < LOST_GRACE_MS || (gone < LOST_GRACE_MAX_MS && pidAlive(t.state.pid))) return;
    const s = readState(t.dir);
    if (s && isFinal(s.state)) return void (await this.serial(() => this.finish(t, s)));
    killAgentGroup(t.state.agentPid, t.run.runId);
    const error = existsSync(join(t.dir, FILES.cancel)) ? undefined : "the run's tmux session ended without an exit record (killed from outside, or the machine restarted)";
    const state = error ? 'failed' : 'cancelled';
    await this.serial(() => this.finish(t, this.setState(t, { ...t.state, state, ...(error ? { error } : {}), endedAt: new Date().toISOString() })));
  }

  /** New whole lines of stream.jsonl → progress events (at most MAX_PROGRESS_LINES per run). */
  private readProgress(t: Tracked): void {
    const out: { seq: number; text: string }[] = [];
    for (const text of readNewLines(join(t.dir, FILES.stream), t, t.run.runtime)) if (++t.seq <= MAX_PROGRESS_LINES) out.push({ seq: t.seq, text });
    for (let i = 0; i < out.length; i += PROGRESS_BATCH) this.emit([progressEvent(t.run, out.slice(i, i + PROGRESS_BATCH))]);
  }

  /** A run reached a final state: result, patch and events, then its slot goes to the next. */
  private async finish(t: Tracked, s: StateFile): Promise<void> {
    if (this.runs.get(t.run.runId) !== t) return;
    this.readProgress(t);
    t.watcher?.close();
    this.runs.delete(t.run.runId);
    // Its result (a pull request's patch: git over the whole worktree) is made off the serial chain: the
    // next run starts meanwhile. Not reported until it is done, so a restart then sends it (recover).
    const runId = t.run.runId;
    const done = finishRun(t.dir, t.run, s, (events) => this.emit(events), this.publish)
      .catch((e) => log.error('skill run: its result could not be made', { runId, error: errorText(e) }))
      .finally(() => (this.finishing.delete(runId), this.kick()));
    this.finishing.set(runId, done);
  }

  // ---- cancel ----

  async cancel(projectId: string, runId: string): Promise<{ runId: string; state: RunState; cancelled: boolean }> {
    const dir = runDir(this.env, runId);
    const run = readRun(dir);
    if (!run || run.projectId !== projectId) throw new CommandError('unknown_run', `no skill run ${runId} in project ${projectId} on this runner`);
    const t = this.runs.get(runId);
    if (!t) return { runId, state: readState(dir)?.state ?? 'failed', cancelled: false };
    writeJson(join(dir, FILES.cancel), { at: new Date().toISOString() });
    await this.serial(async () => {
      if (this.runs.get(runId) === t && t.state.state === 'queued') await this.finish(t, this.setState(t, { state: 'cancelled' }));
    });
    if (this.runs.get(runId) === t) {
      const pid = readState(dir)?.pid;
      if (pidAlive(pid)) process.kill(pid!, 'SIGTERM');
      else await killSession(this.env, sessionName.run(runId)).catch(() => {});
      const until = Date.now() + STOP_GRACE_MS + 5000;
      while (this.runs.get(runId) === t && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 25));
        this.kick();
      }
      await this.launching.get(runId); // a session made after this point would find the run final and exit
      await this.serial(async () => {
        if (this.runs.get(runId) !== t) return;
        await killSession(this.env, sessionName.run(runId)).catch(() => {});
        killAgentGroup(readState(dir)?.agentPid, runId);
        await this.finish(t, this.setState(t, { ...t.state, state: 'cancelled', endedAt: new Date().toISOString() }));
      });
    }
    await this.finishing.get(runId);
    const state = readState(dir)?.state ?? 'cancelled';
    return { runId, state, cancelled: state === 'cancelled' };
  }

  // ---- after a restart ----

  private async recover(): Promise<void> {
    let names: string[];
    try {
      names = readdirSync(runsDir(this.env)).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const dir = join(runsDir(this.env), name);
      const run = readRun(dir);
      if (!run || run.runId !== name) continue;
      const done = readJson(join(dir, FILES.result), resultFile);
      if (done?.reported) continue;
      if (done) {
        await resendResult(dir, run, done, (events) => this.emit(events));
        continue;
      }
      const s = readState(dir) ?? writeState(dir, { runId: run.runId, state: 'queued' });
      const t = this.track(dir, run, s);
      if (isFinal(s.state)) {
        await this.finish(t, s);
        continue;
      }
      this.emit([stateEvent(run, s)]); // it may not have been spooled before the restart
      if (s.state !== 'queued') this.watchDir(t);
      if (s.state === 'running' && readExit(dir)) log.info('skill run ended while the runner was down', { runId: run.runId });
    }
    const live = [...this.runs.values()].filter((t) => t.state.state !== 'queued').length;
    if (this.runs.size) log.info('skill runs picked up after start', { live, queued: this.runs.size - live });
  }
}
