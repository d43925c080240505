#!/usr/bin/env node
// A fake of OpenCode (`opencode`) for the runner tests (reference agent-formats-more.md §2): it writes the real
// store (SQLite `opencode.db` in its data dir, WAL mode, OpenCode's session/message/part tables, through the
// sqlite3 shell) and prints the real `run --format json` events, nothing else of the CLI.
//   opencode --version                                   prints a version
//   opencode auth list                                   lists the providers in <data dir>/auth.json
//   opencode run --format json [-m provider/model] MSG   headless: JSON events on stdout
//   opencode [-m provider/model] [-c | -s ID] --prompt MSG   the TUI: stays until stdin ends or a signal
// Data dir: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode; OPENCODE_DB overrides the database path.
// Per request: a session row (directory = cwd), a user message, an assistant message with tokens and cost, and
// its step-start, text and step-finish parts (the step carrying the same tokens again).
// Tokens: FAKE_OPENCODE_TOKENS (JSON {input,output,reasoning,cache:{read,write}}); exit code: FAKE_OPENCODE_EXIT
// (then an error event); argv, cwd and env are kept in $FAKE_AGENT_DIR/opencode.<pid>.json.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

const argv = process.argv.slice(2);
if (argv[0] === '--version' || argv[0] === '-v') {
  process.stdout.write('1.0.150\n');
  process.exit(0);
}
const dataDir = join(process.env.XDG_DATA_HOME && isAbsolute(process.env.XDG_DATA_HOME) ? process.env.XDG_DATA_HOME : join(process.env.HOME, '.local', 'share'), 'opencode');
if (argv[0] === 'auth' && argv[1] === 'list') {
  let creds = {};
  try {
    creds = JSON.parse(readFileSync(join(dataDir, 'auth.json'), 'utf8'));
  } catch {}
  process.stdout.write(`┌  Credentials ${join(dataDir, 'auth.json')}\n│\n${Object.entries(creds).map(([k, v]) => `●  ${k} ${v.type ?? 'api'}\n│\n`).join('')}└  ${Object.keys(creds).length} credentials\n`);
  process.exit(0);
}
const flag = (...names) => {
  for (let i = 0; i < argv.length; i++) if (names.includes(argv[i])) return argv[i + 1];
  return undefined;
};
const headless = argv[0] === 'run';
const valued = new Set(['-m', '--model', '--format', '-s', '--session', '--prompt', '--agent']);
const positional = headless ? argv.slice(1).filter((a, i, all) => !a.startsWith('-') && !valued.has(all[i - 1])) : [];
const prompt = headless ? positional.join(' ') : flag('--prompt') ?? '';
const [providerID, modelID] = (flag('-m', '--model') ?? 'anthropic/claude-sonnet-4-5').split(/\/(.*)/s);
const dir = process.env.FAKE_AGENT_DIR;
if (dir) {
  mkdirSync(dir, { recursive: true });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(SVC_|OPENCODE_|OTEL_|FAKE_|HOME$|XDG_)/.test(k)));
  writeFileSync(join(dir, `opencode.${process.pid}.json`), JSON.stringify({ argv, cwd: process.cwd(), env, pid: process.pid }));
}

mkdirSync(dataDir, { recursive: true });
const db = process.env.OPENCODE_DB ? (isAbsolute(process.env.OPENCODE_DB) ? process.env.OPENCODE_DB : join(dataDir, process.env.OPENCODE_DB)) : join(dataDir, 'opencode.db');
const id = (p) => `${p}_${Date.now().toString(16)}${randomBytes(7).toString('hex')}`;
const q = (s) => `'${String(s).replace(/'/g, "''")}'`;
const sessionID = flag('-s', '--session') ?? id('ses');
const now = Date.now();
const cwd = process.cwd();
const tokens = { input: 12, output: 187, reasoning: 0, cache: { read: 19024, write: 200 }, ...(process.env.FAKE_OPENCODE_TOKENS ? JSON.parse(process.env.FAKE_OPENCODE_TOKENS) : {}) };
tokens.total = tokens.input + tokens.output + tokens.reasoning + tokens.cache.read + tokens.cache.write;
const cost = 0.0092982;
const userID = id('msg'), msgID = id('msg');
const parts = [
  { id: id('prt'), sessionID, messageID: msgID, type: 'step-start', snapshot: 'abc123' },
  { id: id('prt'), sessionID, messageID: msgID, type: 'text', text: 'Done.', time: { start: now, end: now + 1 } },
  { id: id('prt'), sessionID, messageID: msgID, type: 'step-finish', reason: 'stop', snapshot: 'abc123', cost, tokens },
];
const assistant = { role: 'assistant', time: { created: now, completed: now + 2 }, parentID: userID, modelID, providerID, mode: 'build', agent: 'build', path: { cwd, root: cwd }, cost, tokens, finish: 'stop' };
execFileSync('sqlite3', [db], {
  input: `pragma journal_mode = wal;
create table if not exists session (id text primary key, project_id text not null, parent_id text, slug text not null default '', directory text not null, title text not null default '', version text not null default '', time_created integer not null, time_updated integer not null);
create table if not exists message (id text primary key, session_id text not null, time_created integer not null, time_updated integer not null, data text not null);
create table if not exists part (id text primary key, message_id text not null, session_id text not null, time_created integer not null, time_updated integer not null, data text not null);
insert or ignore into session (id, project_id, directory, title, version, time_created, time_updated) values (${q(sessionID)}, 'prj_fake', ${q(cwd)}, 'fake', '1.0.150', ${now}, ${now});
insert into message values (${q(userID)}, ${q(sessionID)}, ${now}, ${now}, ${q(JSON.stringify({ role: 'user', time: { created: now }, agent: 'build', model: { providerID, modelID } }))});
insert into message values (${q(msgID)}, ${q(sessionID)}, ${now}, ${now + 2}, ${q(JSON.stringify(assistant))});
${parts.map(({ id: pid, sessionID: s, messageID: m, ...data }) => `insert into part values (${q(pid)}, ${q(m)}, ${q(s)}, ${now}, ${now}, ${q(JSON.stringify(data))});`).join('\n')}
`,
});

const out = (type, o) => process.stdout.write(JSON.stringify({ type, timestamp: Date.now(), sessionID, ...o }) + '\n');
const code = Number(process.env.FAKE_OPENCODE_EXIT ?? 0);
if (headless) {
  if (flag('--format') === 'json') {
    out('step_start', { part: parts[0] });
    out('tool_use', { part: { id: id('prt'), sessionID, messageID: msgID, type: 'tool', tool: 'read', callID: 'call_1', state: { status: 'completed', input: { filePath: 'README.md' }, output: 'ok' } } });
    if (code) out('error', { error: { name: 'ProviderAuthError', data: { providerID, message: `fake exit ${code}` } } });
    else {
      out('text', { part: parts[1] });
      out('step_finish', { part: parts[2] });
    }
  } else process.stdout.write('Done.\n');
  process.exit(code);
} else {
  process.stdout.write(`OpenCode (fake) — session ${sessionID}\n> ${prompt}\nDone.\n`);
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => process.exit(0));
}
