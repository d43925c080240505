// Gemini CLI (npm @google/gemini-cli, binary `gemini`; reference agent-formats-more.md §1).
// Authenticated when GEMINI_API_KEY or GOOGLE_API_KEY is set, or Vertex AI is configured
// (GOOGLE_CLOUD_PROJECT with GOOGLE_APPLICATION_CREDENTIALS), or a Google login is cached in
// `~/.gemini/oauth_creds.json` (GEMINI_CLI_HOME replaces $HOME for ~/.gemini). A login kept in the keychain
// (GEMINI_FORCE_ENCRYPTED_FILE_STORAGE) is not seen: set an API key in the profile then.
// Skill runs: `gemini -p <prompt> --output-format stream-json [-m model] --approval-mode auto_edit|default`,
// with its telemetry sent over OTLP/HTTP to the runner's receiver. Slots: `gemini [-m] [--resume] [--approval-mode] -i <prompt>`.
// Chat files: transcript.ts; telemetry records: otlp.ts; headless output and exit codes: stream.ts.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { homeDir } from '../../paths.ts';
import type { Env } from '../../paths.ts';
import { RUNTIME_LABELS } from '../../../protocol/runtimes.ts';
import type { RuntimeDef } from '../types.ts';
import { geminiOtlp } from './otlp.ts';
import { geminiExit, geminiLine } from './stream.ts';
import { geminiRoots, readGemini } from './transcript.ts';

const geminiHome = (env: Env) => join(env.GEMINI_CLI_HOME || homeDir(env), '.gemini');
const APPROVAL_FLAGS = ['--approval-mode', '--yolo', '-y'];
const APPROVAL = { default: 'default', accept_edits: 'auto_edit', yolo: 'yolo', plan: 'plan' } as const;

export const gemini: RuntimeDef<'gemini'> = {
  name: 'gemini',
  label: RUNTIME_LABELS.gemini,
  binary: 'gemini',
  provider: 'google',
  defaultModels: ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite'],
  auth: {
    apiKeyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    credentialFiles: (env) => [join(geminiHome(env), 'oauth_creds.json')],
    extra: (env) => Boolean(env.GOOGLE_CLOUD_PROJECT && env.GOOGLE_APPLICATION_CREDENTIALS && existsSync(env.GOOGLE_APPLICATION_CREDENTIALS)),
  },
  // Agent Skills: ~/.gemini/skills and <project>/.gemini/skills (docs/cli/skills.md; experimental.skills on).
  home: { envVar: 'GEMINI_CLI_HOME', defaultDir: '.gemini', underEnv: '.gemini' },
  // Environment overrides its settings.json (docs/cli/telemetry.md). OTLP/HTTP: the exporters append
  // v1/logs, v1/metrics, v1/traces to the endpoint; prompts are not logged.
  telemetry: ({ endpoint, attrs }) => ({
    env: {
      GEMINI_TELEMETRY_ENABLED: 'true',
      GEMINI_TELEMETRY_TARGET: 'local',
      GEMINI_TELEMETRY_OTLP_ENDPOINT: endpoint,
      GEMINI_TELEMETRY_OTLP_PROTOCOL: 'http',
      GEMINI_TELEMETRY_LOG_PROMPTS: 'false',
      OTEL_RESOURCE_ATTRIBUTES: attrs,
    },
    args: [],
  }),
  headlessArgs: (r, prompt) => {
    // Edits must be allowed for a pull request; a profile that sets its own approval flag decides.
    const own = r.profileArgs.some((a) => APPROVAL_FLAGS.some((f) => a === f || a.startsWith(`${f}=`)));
    return ['--output-format', 'stream-json', ...(r.model ? ['-m', r.model] : []), ...(own ? [] : ['--approval-mode', r.output === 'pull_request' ? 'auto_edit' : 'default']), '-p', prompt];
  },
  streamLine: geminiLine,
  exitMeaning: geminiExit,
  // `-i` runs the first prompt and stays interactive; `--resume` takes `latest`, an index or a session id.
  interactiveArgs: (o, prompt) => [
    ...(o.model ? ['-m', o.model] : []),
    ...(o.resume === true ? ['--resume', 'latest'] : o.resume ? ['--resume', o.resume] : []),
    ...(o.permissionMode ? ['--approval-mode', APPROVAL[o.permissionMode]] : []),
    '-i',
    prompt,
  ],
  otlp: [geminiOtlp],
  usage: { kind: 'records', reader: { roots: geminiRoots, read: readGemini } },
};
