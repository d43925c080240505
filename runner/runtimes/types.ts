// The runtime interface (docs/runner.md "Runtimes"): everything the runner knows about one agent CLI, one
// folder per runtime under runner/runtimes/<name>/, listed in runner/runtimes/index.ts. The rest of the
// runner asks the definition and never tests a runtime's name.
import type { LlmRequest, Runtime } from '../../protocol/usage.ts';
import type { Env } from '../paths.ts';
import type { OtlpMapper } from '../otlp/attrs.ts';
import type { StreamSummary } from './stream-util.ts';

export type { Runtime };

/** What the runner passes to a runtime's telemetry settings. */
export interface TelemetryContext {
  /** The runner's OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (no path). */
  endpoint: string;
  /** svc.project=…,svc.slot=…,svc.issue=… (the OTLP resource attributes svc reads back). */
  attrs: string;
  /** runner.json otlp.codexExperimental. */
  codexExperimental: boolean;
}

/** A skill run (runs/prepare.ts): what the headless argv depends on. */
export interface HeadlessRequest {
  model?: string;
  output: 'report' | 'pull_request';
  /** The profile's own args (a profile that sets its own permission flags decides). */
  profileArgs: readonly string[];
}

/** A slot or orchestrator session (launch.ts). All optional: none given = the runtime's defaults. */
export interface InteractiveOptions {
  model?: string;
  /** A session id to resume, or true for the latest one. */
  resume?: string | true;
  /** svc's permission modes, mapped by each runtime to its own flag. */
  permissionMode?: 'default' | 'accept_edits' | 'yolo' | 'plan';
}

/**
 * A usage reader that reads whole stores and returns per-request records (Gemini's chat files; a SQLite
 * database such as OpenCode's fits the same shape). The records carry ccusage's token semantics
 * (protocol/usage.ts) and `key` is the runtime's dedup key; the reader deduplicates within what it read.
 */
export interface RecordReader {
  /** The stores to read on this machine (directories or database files), from the env and the profiles' env. */
  roots(env: Env, profileEnvs: readonly Env[]): string[];
  /** Every counted request under the roots, deduplicated. `cwd` attaches the session to a project. */
  read(roots: readonly string[]): Promise<RecordRead>;
}

export interface RecordRead {
  /** `mtimeMs`: when its store last changed (a file's mtime, a row's update time): sessions.ingestSince compares it, as for transcripts. */
  requests: { request: LlmRequest; cwd: string | null; ms: number; reportModel: string; session: string; mtimeMs?: number }[];
  /** Lines or rows that could not be read. */
  corrupt: number;
  /** A fingerprint of what was read (sizes, mtimes) so callers can skip an unchanged store. */
  stamp: string;
}

export interface RuntimeDef<N extends Runtime = Runtime> {
  name: N;
  /** What the pages print. */
  label: string;
  /** The default binary, looked up on PATH. */
  binary: string;
  /** The provider a quota message or a price key belongs to (pane.quota_hit, price sources). */
  provider: string;
  /** Its default models (the price table must have them: test/usage/prices.test.ts). */
  defaultModels: readonly string[];
  /** Authenticated when one of these env vars is set (profile env over process env) or a credential file exists. */
  auth: { apiKeyEnv: readonly string[]; credentialFiles(env: Env): string[]; extra?(env: Env): boolean };
  /**
   * Its config home (skills live in `<home>/skills`; a project's in `<root>/<defaultDir>/skills`): the env var
   * that moves it (`underEnv`: the home is that dir below the variable's value) and the default under $HOME.
   */
  home: { envVar: string; defaultDir: string; underEnv?: string };
  /** Environment and args that point its telemetry at the runner's receiver (empty when it has none). */
  telemetry(ctx: TelemetryContext): { env: Record<string, string>; args: string[] };
  /** A skill run's argv after `binary, ...profile.args, ...telemetry args`, prompt included. */
  headlessArgs(r: HeadlessRequest, prompt: string): string[];
  /** One line of its headless output, folded into the summary; answers the progress lines worth showing. */
  streamLine(o: Record<string, unknown>, s: StreamSummary): string[];
  /** What a non-zero exit code means, when the runtime documents it (run.state's error). */
  exitMeaning?(code: number): string | null;
  /** A slot's argv after `binary, ...profile.args, ...telemetry args`, first prompt included. */
  interactiveArgs(o: InteractiveOptions, prompt: string): string[];
  /** Its OTLP log records the receiver maps to requests (otlp/map.ts). */
  otlp: OtlpMapper[];
  /**
   * Usage. `lines`: the line-incremental transcript engine of runner/usage (Claude and Codex: byte offsets,
   * an index, per-file state). `records`: a RecordReader, read whole (new runtimes; SQLite stores too).
   */
  usage: { kind: 'lines' } | { kind: 'records'; reader: RecordReader };
}
