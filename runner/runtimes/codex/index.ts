// OpenAI Codex CLI (binary `codex`; reference agent-formats.md). Authenticated when OPENAI_API_KEY is set
// or `$CODEX_HOME/auth.json` exists (CODEX_HOME from the profile env, then the process env, default
// `~/.codex`). Rollouts: `<home>/sessions/**` and `archived_sessions/**`, read by the line engine of
// runner/usage with this folder's transcript.ts; telemetry (experimental): otlp.ts.
import { join } from 'node:path';
import { homeDir } from '../../paths.ts';
import { RUNTIME_LABELS } from '../../../protocol/runtimes.ts';
import type { RuntimeDef } from '../types.ts';
import { codexOtlp } from './otlp.ts';
import { codexLine } from './stream.ts';

const SANDBOX = { default: [], accept_edits: ['--sandbox', 'workspace-write'], yolo: ['--dangerously-bypass-approvals-and-sandbox'], plan: ['--sandbox', 'read-only'] } as const;

export const codex: RuntimeDef<'codex'> = {
  name: 'codex',
  label: RUNTIME_LABELS.codex,
  binary: 'codex',
  provider: 'openai',
  defaultModels: ['gpt-5-codex', 'gpt-5.1-codex', 'gpt-5'],
  auth: {
    apiKeyEnv: ['OPENAI_API_KEY'],
    credentialFiles: (env) => [join(env.CODEX_HOME || join(homeDir(env), '.codex'), 'auth.json')],
  },
  home: { envVar: 'CODEX_HOME', defaultDir: '.codex' },
  // Codex reads telemetry from its config ([otel] in config.toml); `-c key=value` overrides it for this
  // session only. Only when the receiver maps Codex records (otlp.codexExperimental).
  telemetry: ({ endpoint, attrs, codexExperimental }): { env: Record<string, string>; args: string[] } => {
    if (!codexExperimental) return { env: {}, args: [] };
    return { env: { OTEL_RESOURCE_ATTRIBUTES: attrs }, args: ['-c', `otel.exporter={otlp-http={endpoint="${endpoint}/v1/logs",protocol="binary"}}`, '-c', 'otel.log_user_prompt=false'] };
  },
  headlessArgs: (r, prompt) => ['exec', '--json', ...(r.model ? ['--model', r.model] : []), ...(r.output === 'pull_request' ? ['--sandbox', 'workspace-write'] : []), prompt],
  streamLine: codexLine,
  // `codex resume [id|--last] [prompt]` is a subcommand; options go after it.
  interactiveArgs: (o, prompt) => [
    ...(o.resume === true ? ['resume', '--last'] : o.resume ? ['resume', o.resume] : []),
    ...(o.model ? ['--model', o.model] : []),
    ...(o.permissionMode ? SANDBOX[o.permissionMode] : []),
    prompt,
  ],
  otlp: [codexOtlp],
  usage: { kind: 'lines' },
};
