// svc-runner command line (spec: Runner command line, Runner exit codes). mri parses; each command
// checks its own options; wrong arguments are exit 2 with the usage text. Exit codes: 0 success,
// 1 failure (invalid config, pairing error, unreachable server, lock held), 2 wrong arguments,
// 78 the server closed the connection for good.
import { resolve as resolvePath } from 'node:path';
import mri from 'mri';
import { VERSION } from '../protocol/version.ts';
import { ConfigError, EMIT_FLAGS, jsonObjectFlag, SLOT_START_FLAGS, USAGE_FLAGS, UsageError } from './cli-options.ts';
import { target } from './host.ts';
import { applyLegacyEnv } from './legacy-env.ts';
import { errorText, log } from './log.ts';
import { configPath, spoolDir } from './paths.ts';
import type { Env } from './paths.ts';

// Each command's module is imported when the command runs (esbuild keeps the one file and evaluates a
// module dynamically imported on its first import): a short command such as `emit`, which agents run for
// every event, or `usage` does not evaluate the daemon's WebSocket client, its OTLP receiver's protobuf
// descriptors or its schemas.

export { target } from './host.ts';

export const USAGE = `Usage: svc-runner <command>

Commands:
  pair --server <api-origin> --code <XXXX-XXXX> [--tags a,b] [--no-detect]
                      exchange a one-time pairing code for this runner's id and token;
                      --tags sets the runner's tags (runner pools: targetTags match them)
  run                 the daemon in the foreground
  status              pairing, server and spool state; exit 1 when the server is unreachable
  profiles [--detect [--write]]
                      configured runtime profiles; --detect proposes, --write saves the proposal
  install-service [--platform linux|darwin]
                      write a systemd user unit or launchd agent and print how to start it
  uninstall-service [--platform linux|darwin]
                      print how to stop and disable the service, then remove the files
                      install-service wrote (runner.json and the state directory are kept)
  doctor              check config, pairing, state directory, daemon, server, token, tmux, git,
                      agent CLIs, OTLP port and Node.js: one ok/warn/fail line each; exit 1 on a fail
  usage daily|monthly|session [--json] [--since YYYY-MM-DD] [--until YYYY-MM-DD] [--tz ZONE]
        [--runtime claude|codex|gemini|opencode] [--rescan]
                      tokens and cost from this machine's Claude Code and Codex transcripts, per
                      day/month, runtime and model, or per session (no server needed); reads only
                      what changed since the last call (an index in the state directory);
                      --rescan reads every transcript again
  version             print version and target (also --version, -v)
  help                print this text (also --help, -h)

For agents (docs/orchestrator.md):
  emit <type> [--slot S] [--issue N] [--summary T] [--checkpoint C] [--pr N [--url U]]
       [--reason T] [--question T] [--title T] [--branch B] [--state S] [--data JSON]
       [--project-root DIR]
                      append one event line to the project's .svc/events.jsonl
  slot-start <slot> --issue N [--profile ID] [--branch B] [--base REF] [--title T] [--project-root DIR]
                      start a worker in the slot's worktree and tmux session
  pr-merge <N> [--project-root DIR]
                      merge pull/merge request N through the project's code host (GitHub or
                      GitLab), asked of the running daemon; only when .svc/pr/<N>.json says
                      approve; exit 1 with the host's reason when it refuses
  pr-create --title T [--body B] [--project-root DIR]
                      push the branch checked out here and open its pull/merge request (or
                      answer the open one), asked of the running daemon; prints {pr, url, branch}
  pr-list [--project-root DIR]
                      the open pull/merge requests with their checks (state, summary, each check)
  pr-view <N> [--project-root DIR]
                      one pull/merge request: state, branch, files, checks, reviews, mergeability
  issue-list [--project-root DIR]
                      the project's open issues (its queue)
  issue-view <N> [--project-root DIR]
                      one issue: title, body, labels, author and its comments, oldest first
                      (these four read the code host through the running daemon with the
                      project's token, GitHub and GitLab alike, and print one JSON line)

Internal (not for users):
  exec-run <runDir>   run a skill run inside its terminal-multiplexer session
  spool-append <kind> [--source <source>] [--payload <json>] [--count <n>]
                      append events to the spool (tests and benchmarks)

--server is http(s)://host[:port][/path] without credentials, query or fragment.
Files: runner.json in $XDG_CONFIG_HOME/svc/ (~/.config/svc/), state in $XDG_STATE_HOME/svc/.
`;

type Out = { write: (s: string) => unknown };

const OPTIONS: Record<string, { flags: string[]; positional: number }> = {
  pair: { flags: ['server', 'code', 'tags', 'detect'], positional: 0 },
  run: { flags: [], positional: 0 },
  status: { flags: [], positional: 0 },
  profiles: { flags: ['detect', 'write'], positional: 0 },
  'install-service': { flags: ['platform'], positional: 0 },
  'uninstall-service': { flags: ['platform'], positional: 0 },
  doctor: { flags: [], positional: 0 },
  'exec-run': { flags: [], positional: 1 },
  'spool-append': { flags: ['source', 'payload', 'count'], positional: 1 },
  emit: { flags: EMIT_FLAGS, positional: 1 },
  'slot-start': { flags: SLOT_START_FLAGS, positional: 1 },
  usage: { flags: USAGE_FLAGS, positional: 1 },
  'pr-merge': { flags: ['project-root'], positional: 1 },
  'pr-view': { flags: ['project-root'], positional: 1 },
  'issue-view': { flags: ['project-root'], positional: 1 },
  'pr-list': { flags: ['project-root'], positional: 0 },
  'issue-list': { flags: ['project-root'], positional: 0 },
  'pr-create': { flags: ['title', 'body', 'project-root'], positional: 0 },
};

function checkOptions(command: string, args: mri.Argv): void {
  const allowed = OPTIONS[command];
  for (const key of Object.keys(args)) {
    if (key === '_' || allowed.flags.includes(key)) continue;
    throw new UsageError(`${command}: unknown option --${key}`);
  }
  const extra = args._.slice(1);
  if (extra.length !== allowed.positional) {
    throw new UsageError(allowed.positional ? `${command}: expects ${allowed.positional} argument(s)` : `${command}: unexpected argument '${extra[0]}'`);
  }
}

function stringFlag(args: mri.Argv, name: string, required: boolean): string | undefined {
  const v = args[name];
  if (v === undefined) {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} needs a value`);
  return v;
}

/** The next step when detection found no agent CLI: the runner cannot start a run without one. */
const NO_PROFILE_FOUND = [
  'No agent CLI was found on PATH, so this runner cannot start a run yet. Next:',
  '  1. install Claude Code (`npm install -g @anthropic-ai/claude-code`) or the Codex CLI (`npm install -g @openai/codex`),',
  '  2. log in once with it (`claude`, or `codex login`) as the user the runner runs as,',
  '  3. run `svc-runner profiles --detect --write` again, then restart the runner.',
  '',
].join('\n');

async function profilesCommand(args: mri.Argv, env: Env, out: Out, err: Out): Promise<number> {
  if (args.write && !args.detect) throw new UsageError('profiles: --write needs --detect');
  if (args.detect !== undefined && typeof args.detect !== 'boolean') throw new UsageError('profiles: --detect takes no value');
  const { loadConfig, saveConfig } = await import('./config.ts');
  const { detectProfiles, printable, reportProfile } = await import('./profiles.ts');
  const path = configPath(env);
  const loaded = loadConfig(path);
  if (!args.detect) {
    const reports = await Promise.all(loaded.config.profiles.map((p) => reportProfile(p, env)));
    out.write(JSON.stringify(reports.map(printable), null, 2) + '\n');
    return 0;
  }
  const proposal = await detectProfiles(loaded.config.profiles, env);
  out.write(JSON.stringify(proposal.map(printable), null, 2) + '\n');
  if (args.write) {
    try {
      saveConfig(path, { ...loaded.raw, profiles: proposal.map((r) => r.profile) });
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      err.write(`svc-runner: ${path} could not be written: ${e instanceof Error ? e.message : String(e)}\n`);
      return 1;
    }
    err.write(`Wrote ${proposal.length} profile${proposal.length === 1 ? '' : 's'} to ${path}\n`);
    if (proposal.length === 0) err.write(NO_PROFILE_FOUND);
  }
  return 0;
}

async function spoolAppendCommand(args: mri.Argv, env: Env, out: Out): Promise<number> {
  const kind = String(args._[1]);
  const source = stringFlag(args, 'source', false) ?? 'cli';
  const count = args.count === undefined ? 1 : Number(args.count);
  if (!Number.isInteger(count) || count < 1 || count > 100_000) throw new UsageError('spool-append: --count must be 1 to 100000');
  const payload = jsonObjectFlag(stringFlag(args, 'payload', false), 'spool-append: --payload must be a JSON object');
  const [{ loadConfig }, { Spool }] = await Promise.all([import('./config.ts'), import('./spool.ts')]);
  const spool = new Spool(spoolDir(env), loadConfig(configPath(env)).config.runnerId);
  const events = Array.from({ length: count }, (_, i) => ({ source, kind, payload: count > 1 ? { ...payload, seq: i } : payload }));
  try {
    for (let i = 0; i < events.length; i += 1000) spool.append(events.slice(i, i + 1000));
  } catch (e) {
    throw new UsageError(`spool-append: ${errorText(e).split('\n')[0]}`);
  }
  out.write(`spooled ${count} event(s)\n`);
  return 0;
}

async function dispatch(command: string, args: mri.Argv, env: Env, out: Out, err: Out): Promise<number> {
  checkOptions(command, args);
  switch (command) {
    case 'pair': {
      const [{ parseServer }, { normalizeCode, pair, parseTags }] = await Promise.all([import('./config.ts'), import('./pair.ts')]);
      const server = parseServer(stringFlag(args, 'server', true)!);
      if ('error' in server) throw new UsageError(`pair: --server ${server.error}`);
      const code = normalizeCode(stringFlag(args, 'code', true)!);
      if (!code) throw new UsageError('pair: --code must look like ABCD-2345 (two groups of 4 letters or digits)');
      if (args.detect === true) throw new UsageError('pair: --detect is the default; only --no-detect is an option');
      // Checked here, before the single-use code is spent on a request the server would refuse.
      const tagsText = stringFlag(args, 'tags', false);
      const tags = tagsText === undefined ? undefined : parseTags(tagsText);
      if (tags && 'error' in tags) throw new UsageError(`pair: --tags: ${tags.error}`);
      return pair(server.url, code, args.detect !== false, env, out, err, tags?.tags);
    }
    case 'run':
      return (await import('./daemon.ts')).runDaemon(env, err);
    case 'status':
      return (await import('./status.ts')).status(env, out, err);
    case 'profiles':
      return profilesCommand(args, env, out, err);
    case 'install-service':
    case 'uninstall-service': {
      const platform = stringFlag(args, 'platform', false) ?? env.SVC_RUNNER_SERVICE_PLATFORM ?? process.platform;
      if (!['linux', 'darwin'].includes(platform) && args.platform !== undefined) throw new UsageError(`${command}: --platform is linux or darwin`);
      const { installService, uninstallService } = await import('./service.ts');
      return (command === 'install-service' ? installService : uninstallService)(platform, env, out, err);
    }
    case 'doctor':
      return (await import('./doctor.ts')).doctor(env, out);
    case 'exec-run':
      return (await import('./runs/exec.ts')).execRun(resolvePath(String(args._[1])), env, err);
    case 'spool-append':
      return spoolAppendCommand(args, env, out);
    case 'emit':
      return (await import('./emit.ts')).emitCommand(args, env, out, err);
    case 'slot-start':
      return (await import('./slot-start.ts')).slotStartCommand(args, env, out, err);
    case 'usage':
      return (await import('./usage/command.ts')).usageCommand(args, env, out, err);
    case 'pr-merge':
    case 'pr-view':
    case 'issue-view':
    case 'pr-list':
    case 'issue-list':
      return (await import('./host-commands.ts')).hostCommand(command, args, env, out, err);
    case 'pr-create':
      return (await import('./pr-create.ts')).prCreateCommand(args, env, out, err);
  }
  throw new UsageError(`unknown command '${command}'`);
}

export async function main(argv: string[], env: Env = process.env, out: Out = process.stdout, err: Out = process.stderr): Promise<number> {
  const args = mri(argv, {
    boolean: ['help', 'version', 'detect', 'write', 'json'],
    string: ['server', 'code', 'tags', 'platform', 'source', 'payload', 'count', 'since', 'until', 'tz', 'runtime', ...EMIT_FLAGS, ...SLOT_START_FLAGS],
    alias: { h: 'help', v: 'version' },
  });
  if (args.version) return (out.write(`${VERSION} ${target()}\n`), 0);
  if (args.help) return (out.write(USAGE), 0);
  const command = args._[0] === undefined ? undefined : String(args._[0]);
  if (command === 'version' || command === 'help') {
    if (args._.length > 1) return usageError(err, `${command}: unexpected argument '${args._[1]}'`);
    return (out.write(command === 'version' ? `${VERSION} ${target()}\n` : USAGE), 0);
  }
  if (command === undefined) return usageError(err, 'a command is required');
  if (!Object.hasOwn(OPTIONS, command)) return usageError(err, `unknown command '${command}'`);
  applyLegacyEnv(env);
  log.debug(`svc-runner ${VERSION} ${target()}: ${command}`, { pid: process.pid });
  try {
    return await dispatch(command, args, env, out, err);
  } catch (e) {
    if (e instanceof UsageError) return usageError(err, e.message);
    if (e instanceof ConfigError) {
      err.write(`svc-runner: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

function usageError(err: Out, message: string): number {
  err.write(`svc-runner: ${message}\n\n${USAGE}`);
  return 2;
}

{
  process.on('uncaughtException', (e) => {
    log.error('svc-runner crashed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    process.exit(1);
  });
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // The daemon may leave sockets or watchers closing behind it: do not wait for them.
      if (process.argv[2] === 'run') setTimeout(() => process.exit(code), 1000).unref();
    },
    (e) => {
      log.error('svc-runner failed', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
      process.exitCode = 1;
    },
  );
}
