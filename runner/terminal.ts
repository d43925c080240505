// terminal.attach (spec: Server commands to a runner; DESIGN §5): a live terminal on one of a
// project's tmux sessions, relayed by the server to an admin's browser. No native PTY module: the
// runner attaches with tmux control mode (`tmux -C attach-session`), sends the current screen first
// (`capture-pane -e`), then relays `%output` (tmux escapes bytes < 32 and `\` as octal `\ooo`) as
// `term.output` frames. Input arrives as `term.input` and is typed with `send-keys -H <hex bytes>`;
// `term.resize` becomes `refresh-client -C <cols>x<rows>`; `term.close` (or the server going away)
// detaches — the session itself is never killed. Sessions an admin may attach to: the project's
// orchestrator `svc-<projectId>-orch`, its slots `svc-<projectId>-slot-<slot>` (docs/orchestrator.md)
// and its skill runs `svc-run-<runId>` (docs/skill-runs.md).
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import type { CommandArgs } from '../protocol/commands.ts';
import type { RunnerFrame } from '../protocol/frames.ts';
import { CommandError } from './errors.ts';
import type { ProjectEntry } from './config.ts';
import { log } from './log.ts';
import { RUN_ID, readRun, runDir } from './runs/files.ts';
import type { Env } from './paths.ts';
import { hasSession, requireTmux, sessionName, socketArgs, tmux } from './tmux.ts';

/** At most this many terminals at once on one runner. */
const MAX_TERMINALS = 8;
/** Output is sent in frames of at most this many characters, gathered for FLUSH_MS. */
const CHUNK = 60 * 1024;
const FLUSH_MS = 25;

/** Decode one `%output` payload read as latin1 (one char per byte): `\ooo` octal escapes to bytes. */
export function decodeOutput(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\' && /^[0-7]{3}$/.test(text.slice(i + 1, i + 4))) {
      bytes.push(parseInt(text.slice(i + 1, i + 4), 8));
      i += 3;
    } else bytes.push(text.charCodeAt(i) & 0xff);
  }
  return Buffer.from(bytes);
}

/** The sessions of a project an admin may attach to: its orchestrator, its slots, and its skill runs
 *  (`svc-run-<runId>` whose run.json names this project). */
export function attachable(env: Env, projectId: string, session: string): boolean {
  if (session === sessionName.orchestrator(projectId)) return true;
  const slot = sessionName.slot(projectId, '');
  if (session.startsWith(slot)) return /^[A-Za-z0-9_-]{1,32}$/.test(session.slice(slot.length));
  const run = sessionName.run('');
  if (!session.startsWith(run)) return false;
  const runId = session.slice(run.length);
  return RUN_ID.test(runId) && readRun(runDir(env, runId))?.projectId === projectId;
}

const CURSOR_MARK = '@@svc-term-cursor@@';

/** The session's active pane as it is now, as terminal output: clear, the visible lines with their
 *  colours (`capture-pane -e`), then the cursor where the pane has it. */
export async function screenOf(env: Env, session: string): Promise<string> {
  const target = `=${session}:`;
  const r = await tmux(env, ['capture-pane', '-p', '-e', '-t', target, ';', 'display-message', '-p', '-t', target, `${CURSOR_MARK} #{cursor_x} #{cursor_y}`]);
  const at = r.stdout.lastIndexOf(CURSOR_MARK);
  if (r.code !== 0 || at < 0) return '';
  const lines = r.stdout.slice(0, at).replace(/\n$/, '').split('\n');
  const [x, y] = r.stdout.slice(at + CURSOR_MARK.length).trim().split(' ').map(Number);
  const cursor = Number.isInteger(x) && Number.isInteger(y) ? `\x1b[${y + 1};${x + 1}H` : '';
  return '\x1b[0m\x1b[2J\x1b[H' + lines.join('\r\n') + '\x1b[0m' + cursor;
}

interface Terminal {
  channel: string;
  session: string;
  child: ChildProcessWithoutNullStreams;
  attached: boolean;
  pending: string[];
}

/**
 * `tmux <args>` as the runner's child (`exec`: same pid, so SIGTERM and the pipes reach tmux itself),
 * with a watchdog beside it. A control client normally ends when its stdin reaches EOF, which is what a
 * runner that dies (kill -9, a crash) leaves; tmux 3.3a does not always act on that EOF, and the orphan
 * stays attached to the session. Once a second, the watchdog checks that the runner ($1) still lives;
 * when it is gone and the client is not, it ends the client. It holds none of the pipes (its stdio is
 * /dev/null) and stops with the client.
 */
const CONTROL_CLIENT = [
  'runner=$1; shift; me=$$',
  '( while kill -0 "$runner" 2>/dev/null && kill -0 "$me" 2>/dev/null; do sleep 1; done; kill -0 "$runner" 2>/dev/null || kill "$me" 2>/dev/null ) </dev/null >/dev/null 2>&1 &',
  'exec tmux "$@"',
].join('\n');

export class Terminals {
  private readonly open = new Map<string, Terminal>();

  constructor(
    private readonly env: Env,
    private readonly send: (frame: RunnerFrame) => boolean,
  ) {}

  get count(): number {
    return this.open.size;
  }

  /** The command handler: attach and answer once the screen is on its way. */
  async attach(args: CommandArgs<'terminal.attach'>, ctx: { projects: () => readonly ProjectEntry[] }): Promise<{ channel: string; session: string }> {
    const { projectId, session, channel } = args;
    if (!ctx.projects().some((p) => p.id === projectId)) throw new CommandError('unknown_project', `project ${projectId} is not on this runner's watch list`);
    if (!attachable(this.env, projectId, session)) throw new CommandError('session_not_allowed', `${session} is not a session of project ${projectId} (its orchestrator, a slot or a skill run)`);
    if (this.open.has(channel)) throw new CommandError('channel_in_use', 'this terminal channel is already open');
    if (this.open.size >= MAX_TERMINALS) throw new CommandError('busy', `at most ${MAX_TERMINALS} terminals at once`);
    await requireTmux(this.env);
    if (!(await hasSession(this.env, session))) throw new CommandError('no_session', `the tmux session ${session} is not running`);

    const screen = await screenOf(this.env, session);
    const child = spawn('sh', ['-c', CONTROL_CLIENT, 'svc-terminal', String(process.pid), ...socketArgs(this.env), '-C', 'attach-session', '-t', `=${session}`], {
      env: this.env as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const term: Terminal = { channel, session, child, attached: false, pending: [] };
    this.open.set(channel, term);
    const decoder = new StringDecoder('utf8');
    let buffered = '';
    child.stdout.setEncoding('latin1'); // one char per byte: the octal escapes decode to raw bytes
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith('%output ')) {
          const payload = line.slice(line.indexOf(' ', 8) + 1);
          this.output(channel, decoder.write(decodeOutput(payload)));
        } else if (line.startsWith('%session-changed') && !term.attached) {
          term.attached = true;
          for (const c of term.pending.splice(0)) child.stdin.write(c);
        } else if (line.startsWith('%exit')) {
          this.end(channel, 'the session ended or the terminal was detached');
        }
      }
    });
    child.stderr.on('data', () => {});
    child.stdin.on('error', () => {});
    child.on('error', (err) => this.end(channel, `tmux could not run: ${err.message}`));
    child.on('close', () => this.end(channel, 'detached'));
    // The screen as it is now, before any live output.
    this.output(channel, screen);
    if (args.cols && args.rows) this.resize(channel, args.cols, args.rows);
    log.info('terminal attached', { session, channel });
    return { channel, session };
  }

  private command(term: Terminal, line: string): void {
    if (term.attached) term.child.stdin.write(line);
    else term.pending.push(line);
  }

  input(channel: string, data: string): void {
    const term = this.open.get(channel);
    if (!term || data.length === 0) return;
    const bytes = Buffer.from(data, 'utf8');
    for (let i = 0; i < bytes.length; i += 256) {
      const hex = [...bytes.subarray(i, i + 256)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
      this.command(term, `send-keys -t =${term.session}: -H ${hex}\n`);
    }
  }

  resize(channel: string, cols: number, rows: number): void {
    const term = this.open.get(channel);
    if (term) this.command(term, `refresh-client -C ${cols}x${rows}\n`);
  }

  /** Detach (never kill the session). */
  close(channel: string): void {
    const term = this.open.get(channel);
    if (!term) return;
    this.command(term, 'detach-client\n');
    setTimeout(() => term.child.kill('SIGTERM'), 2000).unref();
  }

  closeAll(): void {
    for (const channel of [...this.open.keys()]) this.close(channel);
  }

  /** Output is gathered for FLUSH_MS and sent in frames of at most CHUNK characters, so a busy pane
   *  stays well inside the server's per-connection frame rate. */
  private readonly outBuffers = new Map<string, string>();
  private output(channel: string, data: string): void {
    if (!data) return;
    const had = this.outBuffers.has(channel);
    this.outBuffers.set(channel, (this.outBuffers.get(channel) ?? '') + data);
    if (!had) setTimeout(() => this.flush(channel), FLUSH_MS);
  }

  private flush(channel: string): void {
    const data = this.outBuffers.get(channel) ?? '';
    this.outBuffers.delete(channel);
    for (let i = 0; i < data.length; i += CHUNK) this.send({ type: 'term.output', channel, data: data.slice(i, i + CHUNK) });
  }

  private end(channel: string, reason: string): void {
    if (!this.open.delete(channel)) return;
    this.flush(channel);
    this.send({ type: 'term.exit', channel, reason });
    log.info('terminal closed', { channel, reason });
  }
}
