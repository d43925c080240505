// OpenCode (anomalyco/opencode, formerly sst/opencode; binary `opencode`; reference agent-formats-more.md §2).
// Detected by `opencode --version`. Authenticated when a provider key OpenCode reads is in the env, or
// `opencode auth list` lists a stored credential (it lists `<data dir>/auth.json`, read here directly, with
// `opencode auth list` itself asked when that file cannot be read).
// Skill runs: `opencode run --format json [-m provider/model] <prompt>` (no permission prompt headless).
// Slots: `opencode [-m provider/model] [-c | -s <id>] --prompt <prompt>` (the TUI with a first prompt).
// Usage: its SQLite database and legacy JSON storage (store.ts); headless output and exit codes: stream.ts.
// OpenCode's OpenTelemetry (OTEL_EXPORTER_OTLP_ENDPOINT) carries no token counts of its own: not used.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNTIME_LABELS } from '../../../protocol/runtimes.ts';
import type { Env } from '../../paths.ts';
import { childProcess } from '../../lazy-builtins.ts';
import { obj } from '../stream-util.ts';
import type { RuntimeDef } from '../types.ts';
import { opencodeDataDir, opencodeRoots, readOpencode } from './store.ts';
import { opencodeExit, opencodeLine } from './stream.ts';

/** A bare model name gets the provider OpenCode knows it under; `provider/model` is kept. */
export function opencodeModel(model: string): string {
  if (model.includes('/')) return model;
  if (/^claude-/.test(model)) return `anthropic/${model}`;
  if (/^(gpt-|o\d)/.test(model)) return `openai/${model}`;
  if (/^gemini-/.test(model)) return `google/${model}`;
  return `opencode/${model}`;
}

function storedCredentials(env: Env): boolean {
  try {
    return Object.keys(obj(JSON.parse(readFileSync(join(opencodeDataDir(env), 'auth.json'), 'utf8'))) ?? {}).length > 0;
  } catch {}
  try {
    // `opencode auth list`: "● <Provider> <type>" per stored credential, then the env vars it found.
    const out = childProcess().execFileSync('opencode', ['auth', 'list'], { env: env as NodeJS.ProcessEnv, timeout: 5000, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return /^\s*(\d+) credentials?/m.test(out) ? Number(/^\s*(\d+) credentials?/m.exec(out)![1]) > 0 : /\u25CF/.test(out); // \u25CF is the ● above
  } catch {
    return false;
  }
}

export const opencode: RuntimeDef<'opencode'> = {
  name: 'opencode',
  label: RUNTIME_LABELS.opencode,
  binary: 'opencode',
  provider: 'opencode',
  // Models OpenCode is commonly run with: its own Zen models and the big providers' (all in the price table).
  defaultModels: ['claude-sonnet-4-5', 'gpt-5', 'gemini-2.5-pro', 'glm-4.6', 'kimi-k2-thinking', 'qwen3-coder', 'grok-code-fast-1'],
  auth: {
    apiKeyEnv: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY', 'GEMINI_API_KEY', 'OPENROUTER_API_KEY', 'OPENCODE_API_KEY', 'XAI_API_KEY', 'ZHIPU_API_KEY', 'MOONSHOT_API_KEY'],
    credentialFiles: () => [],
    extra: storedCredentials,
  },
  // Skills: ~/.opencode/skills (OpenCode also reads ~/.config/opencode; OPENCODE_CONFIG_DIR moves it) and <project>/.opencode/skills.
  home: { envVar: 'OPENCODE_CONFIG_DIR', defaultDir: '.opencode' },
  telemetry: () => ({ env: {}, args: [] }),
  headlessArgs: (r, prompt) => ['run', '--format', 'json', ...(r.model ? ['-m', opencodeModel(r.model)] : []), prompt],
  streamLine: opencodeLine,
  exitMeaning: opencodeExit,
  // The TUI takes `--prompt` as its first message, `-c` for the last session and `-s <id>` for one session.
  // Permission modes have no flag: OpenCode's `permission` config decides.
  interactiveArgs: (o, prompt) => [
    ...(o.model ? ['-m', opencodeModel(o.model)] : []),
    ...(o.resume === true ? ['-c'] : o.resume ? ['-s', o.resume] : []),
    '--prompt',
    prompt,
  ],
  otlp: [],
  usage: { kind: 'records', reader: { roots: opencodeRoots, read: readOpencode } },
};
