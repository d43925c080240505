#!/usr/bin/env node
// A fake of Gemini CLI (`gemini`) for the runner tests (reference agent-formats-more.md §1): it writes the
// real chat files and sends the real telemetry, nothing else of the CLI.
//   gemini --version                       prints a version
//   gemini [-m M] [--approval-mode A] [-o stream-json] -p PROMPT    headless: stream-json on stdout
//   gemini [-m M] [--resume X] [--approval-mode A] -i PROMPT        interactive: stays until stdin ends or a signal
// Chat file: $GEMINI_CLI_HOME|$HOME/.gemini/tmp/<slug of the cwd>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl
// (metadata line, the user message, the gemini message twice under one id — without and then with tokens —
// and a $set), `.project_root` in the slug dir and `projects.json`. Telemetry, when GEMINI_TELEMETRY_ENABLED is
// true with protocol http: a `gemini_cli.api_response` log record, its GenAI copy and a user_prompt record,
// through the real OpenTelemetry JS OTLP/HTTP (JSON) log exporter to $GEMINI_TELEMETRY_OTLP_ENDPOINT/v1/logs.
// Tokens per request: FAKE_GEMINI_TOKENS (JSON {input,output,cached,thoughts,tool}); exit code: FAKE_GEMINI_EXIT
// (then an error result); argv, cwd and the SVC_/GEMINI_/OTEL_ env are kept in $FAKE_AGENT_DIR/gemini.<pid>.json.
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const argv = process.argv.slice(2);
if (argv[0] === '--version' || argv[0] === '-v') {
  process.stdout.write('0.56.0\n');
  process.exit(0);
}
const flag = (...names) => {
  for (let i = 0; i < argv.length; i++) if (names.includes(argv[i])) return argv[i + 1];
  return undefined;
};
const headless = flag('-p', '--prompt');
const interactive = flag('-i', '--prompt-interactive');
const prompt = headless ?? interactive ?? '';
const model = !flag('-m', '--model') || ['auto', 'pro', 'flash'].includes(flag('-m', '--model')) ? 'gemini-2.5-flash' : flag('-m', '--model');
const format = flag('-o', '--output-format') ?? 'text';
const resume = flag('-r', '--resume');
const dir = process.env.FAKE_AGENT_DIR;
if (dir) {
  mkdirSync(dir, { recursive: true });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(SVC_|GEMINI_|OTEL_|FAKE_|HOME$)/.test(k)));
  writeFileSync(join(dir, `gemini.${process.pid}.json`), JSON.stringify({ argv, cwd: process.cwd(), env, pid: process.pid }));
}

const home = join(process.env.GEMINI_CLI_HOME || process.env.HOME, '.gemini');
const cwd = process.cwd();
const slug = basename(cwd).toLowerCase().replace(/[^a-z0-9]+/g, '-') || 'root';
const projectDir = join(home, 'tmp', slug);
mkdirSync(join(projectDir, 'chats'), { recursive: true });
writeFileSync(join(projectDir, '.project_root'), cwd);
let projects = { projects: {} };
try {
  projects = JSON.parse(readFileSync(join(home, 'projects.json'), 'utf8'));
} catch {}
projects.projects[cwd] = slug;
writeFileSync(join(home, 'projects.json'), JSON.stringify(projects));

const sessionId = resume && /^[0-9a-f-]{36}$/.test(resume) ? resume : randomUUID();
const now = new Date();
const stamp = now.toISOString().slice(0, 16).replace(':', '-');
const file = join(projectDir, 'chats', `session-${stamp}-${sessionId.slice(0, 8)}.jsonl`);
const line = (o) => appendFileSync(file, JSON.stringify(o) + '\n');
const tokens = { input: 15327, output: 23, cached: 11526, thoughts: 919, tool: 7, ...(process.env.FAKE_GEMINI_TOKENS ? JSON.parse(process.env.FAKE_GEMINI_TOKENS) : {}) };
tokens.total = tokens.input + tokens.output + tokens.thoughts + tokens.tool;
const at = now.toISOString();
line({ sessionId, projectHash: 'f'.repeat(64), startTime: at, lastUpdated: at, kind: 'main' });
line({ id: randomUUID(), timestamp: at, type: 'user', content: [{ text: prompt }] });
const messageId = randomUUID();
line({ id: messageId, timestamp: at, type: 'gemini', content: '', model, thoughts: [], toolCalls: [] });
line({ id: messageId, timestamp: at, type: 'gemini', content: 'Done.', model, thoughts: [], toolCalls: [], tokens });
line({ $set: { lastUpdated: new Date().toISOString() } });

async function telemetry() {
  const endpoint = process.env.GEMINI_TELEMETRY_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!/^(true|1)$/.test(process.env.GEMINI_TELEMETRY_ENABLED ?? '') || process.env.GEMINI_TELEMETRY_OTLP_PROTOCOL !== 'http' || !endpoint) return;
  const { OTLPLogExporter } = await import('@opentelemetry/exporter-logs-otlp-http');
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  const { LoggerProvider, SimpleLogRecordProcessor } = await import('@opentelemetry/sdk-logs');
  const extra = Object.fromEntries((process.env.OTEL_RESOURCE_ATTRIBUTES ?? '').split(',').filter((kv) => kv.includes('=')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const exporter = new OTLPLogExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/logs` });
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': 'gemini-cli', 'service.version': process.version, 'session.id': sessionId, ...extra }),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('gemini-cli');
  const common = { 'session.id': sessionId, 'installation.id': 'inst-1', interactive: !headless, 'user.email': 'someone@example.test', auth_type: 'gemini-api-key', 'event.timestamp': at };
  const logPrompts = process.env.GEMINI_TELEMETRY_LOG_PROMPTS !== 'false';
  logger.emit({ body: 'User prompt.', attributes: { ...common, 'event.name': 'gemini_cli.user_prompt', prompt_length: prompt.length, prompt_id: 'p1', ...(logPrompts ? { prompt } : {}) } });
  logger.emit({
    body: `API response from ${model}. Status: 200. Duration: 1234ms.`,
    attributes: {
      ...common, 'event.name': 'gemini_cli.api_response', model, status_code: 200, duration_ms: 1234, prompt_id: 'p1', role: 'main',
      input_token_count: tokens.input, output_token_count: tokens.output, cached_content_token_count: tokens.cached,
      thoughts_token_count: tokens.thoughts, tool_token_count: tokens.tool, total_token_count: tokens.total, finish_reasons: ['STOP'], response_text: 'Done.',
    },
  });
  logger.emit({ body: 'GenAI operation details.', attributes: { ...common, 'event.name': 'gen_ai.client.inference.operation.details', 'gen_ai.request.model': model, 'gen_ai.usage.input_tokens': tokens.input, 'gen_ai.usage.output_tokens': tokens.output } });
  await provider.forceFlush();
  await provider.shutdown();
}

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const code = Number(process.env.FAKE_GEMINI_EXIT ?? 0);
if (headless !== undefined) {
  if (format === 'stream-json') {
    out({ type: 'init', timestamp: at, session_id: sessionId, model });
    out({ type: 'message', timestamp: at, role: 'user', content: prompt });
    out({ type: 'tool_use', timestamp: at, tool_name: 'read_file', tool_id: 'read_file-1', parameters: { file_path: 'README.md' } });
    out({ type: 'tool_result', timestamp: at, tool_id: 'read_file-1', status: 'success', output: 'ok' });
    out({ type: 'message', timestamp: at, role: 'assistant', content: 'Done', delta: true });
    out({ type: 'message', timestamp: at, role: 'assistant', content: '.', delta: true });
    const stats = { total_tokens: tokens.total, input_tokens: tokens.input, output_tokens: tokens.output, cached: tokens.cached, input: tokens.input - tokens.cached, duration_ms: 1234, tool_calls: 1 };
    out(code ? { type: 'result', timestamp: at, status: 'error', error: { type: 'FatalError', message: `fake exit ${code}` }, stats } : { type: 'result', timestamp: at, status: 'success', stats });
  } else process.stdout.write('Done.\n');
  await telemetry();
  process.exit(code);
} else {
  process.stdout.write(`Gemini CLI (fake) — session ${sessionId}\n> ${prompt}\nDone.\n`);
  await telemetry();
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => process.exit(0));
}
