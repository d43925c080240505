// Claude Code (binary `claude`; reference agent-formats.md). Authenticated when ANTHROPIC_API_KEY is set
// (profile env or process env) or its credentials file exists: `$CLAUDE_CONFIG_DIR/.credentials.json`,
// default `~/.claude/.credentials.json` (on macOS Claude Code may keep the login in the Keychain instead;
// then only the API key counts). Transcripts: `<config dir>/projects/**/*.jsonl`, read by the line engine
// of runner/usage with this folder's transcript.ts; telemetry: otlp.ts.
import { join } from 'node:path';
import { homeDir } from '../../paths.ts';
import { RUNTIME_LABELS } from '../../../protocol/runtimes.ts';
import type { RuntimeDef } from '../types.ts';
import { claudeOtlp } from './otlp.ts';
import { claudeLine } from './stream.ts';

const PERMISSION_FLAGS = ['--permission-mode', '--dangerously-skip-permissions', '--allowedTools', '--allowed-tools'];
const PERMISSION_MODE = { default: 'default', accept_edits: 'acceptEdits', yolo: 'bypassPermissions', plan: 'plan' } as const;

export const claude: RuntimeDef<'claude'> = {
  name: 'claude',
  label: RUNTIME_LABELS.claude,
  binary: 'claude',
  provider: 'anthropic',
  defaultModels: ['claude-sonnet-4-5', 'claude-opus-4-5', 'claude-haiku-4-5'],
  auth: {
    apiKeyEnv: ['ANTHROPIC_API_KEY'],
    credentialFiles: (env) => [join(env.CLAUDE_CONFIG_DIR || join(homeDir(env), '.claude'), '.credentials.json')],
  },
  home: { envVar: 'CLAUDE_CONFIG_DIR', defaultDir: '.claude' },
  telemetry: ({ endpoint, attrs }) => ({
    env: {
      CLAUDE_CODE_ENABLE_TELEMETRY: '1',
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_LOGS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_RESOURCE_ATTRIBUTES: attrs,
    },
    args: [],
  }),
  headlessArgs: (r, prompt) => {
    // Edits must be allowed for a pull request; a profile that sets its own permission flags decides.
    const edits = r.output === 'pull_request' && !r.profileArgs.some((a) => PERMISSION_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)));
    return ['-p', '--output-format', 'stream-json', '--verbose', ...(r.model ? ['--model', r.model] : []), ...(edits ? ['--permission-mode', 'acceptEdits'] : []), prompt];
  },
  streamLine: claudeLine,
  interactiveArgs: (o, prompt) => [
    ...(o.model ? ['--model', o.model] : []),
    ...(o.resume === true ? ['--continue'] : o.resume ? ['--resume', o.resume] : []),
    ...(o.permissionMode ? ['--permission-mode', PERMISSION_MODE[o.permissionMode]] : []),
    prompt,
  ],
  otlp: [claudeOtlp],
  usage: { kind: 'lines' },
};
