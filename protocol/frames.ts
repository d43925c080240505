// Frames of the runner ↔ API WebSocket (`/runner`), validated with zod on both sides (DESIGN §3).
// Every frame is one JSON object with a `type` tag. The handshake carries the runner token
// (`Authorization: Bearer`) and the protocol version (`X-Svc-Protocol`); close codes below.
import * as z from 'zod';
import { COMMAND_NAMES } from './command-names.ts';

export const PROTOCOL_HEADER = 'x-svc-protocol';
export const RUNNER_VERSION_HEADER = 'x-svc-runner-version';

/** Close codes after which the runner exits 78 and is not restarted (spec: Runner connection). */
export const CLOSE = {
  protocolMismatch: 4400,
  unauthorized: 4401,
  replaced: 4409,
} as const;
export const FATAL_CLOSE_CODES: readonly number[] = Object.values(CLOSE);
/** The server is stopping gracefully (SIGTERM; RFC 6455 1012 "service restart"): a runner reconnects from the first backoff step. */
export const SERVICE_RESTART = 1012;

/** Largest frame either side accepts; larger ones are refused without closing the connection. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Most events in one `events` frame. */
export const MAX_BATCH = 500;
/** Frames a runner's connection may send per second, in bursts of up to twice that: the hub drops the
 *  frames beyond it and answers an `error` frame `rate_limited`. */
export const RUNNER_FRAMES_PER_SECOND = 100;

const eventId = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/);

/** One spooled event: runner-unique id (the server stores it idempotently), source, kind, payload. */
export const runnerEvent = z.strictObject({
  id: eventId,
  source: z.string().regex(/^[a-z0-9_.:/-]{1,200}$/i),
  kind: z.string().regex(/^[a-z][a-z0-9_.]{0,63}$/),
  ts: z.iso.datetime({ offset: true }),
  payload: z.record(z.string(), z.unknown()),
});
export type RunnerEvent = z.infer<typeof runnerEvent>;

/** A project on a runner's watch list. `repo` (owner/name on the code host) is sent only to runners that
 *  announced the `codehost` capability in hello: an older runner's strict schema would refuse it. */
export const REPO = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;
/** `pool: true` marks a project this runner serves only as a pool member (skill runs of a `pool` target; no
 *  orchestrator, slots, terminal or code-host polling there): sent only to runners that announce POOL_CAPABILITY. */
/** A GitLab project's full path (nested groups: `group/sub/app`). */
export const GITLAB_PATH = /^[A-Za-z0-9_.-]{1,255}(\/[A-Za-z0-9_.-]{1,255}){1,20}$/;
/** A project whose code host is GitLab (issue 42; docs/gitlab.md): its instance and project path, sent
 *  instead of `repo` and only to runners that announce CODEHOST_GITLAB_CAPABILITY. */
export const gitlabHost = z.strictObject({
  kind: z.literal('gitlab'),
  baseUrl: z.string().max(2048).regex(/^https?:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/),
  path: z.string().max(1024).regex(GITLAB_PATH),
});
export type GitlabHost = z.infer<typeof gitlabHost>;
export const watchedProject = z.strictObject({ id: z.string(), root: z.string(), repo: z.string().regex(REPO).optional(), host: gitlabHost.optional(), pool: z.literal(true).optional() });
export const CODEHOST_CAPABILITY = 'codehost';
/** The runner reads `host` (GitLab) in its watch list and takes GitLab tokens (a project path as `repo`). */
export const CODEHOST_GITLAB_CAPABILITY = 'codehost.gitlab';
/**
 * GitHub App mode (docs/github-app.md, "App mode on the runners"): the runner takes the server's
 * short-lived installation tokens from the `codehost` field of `command` and `projects` frames, keeps
 * them in memory only and prefers them for their repository over its own token. Sent only to runners
 * that announce this capability: an older runner's strict schema would refuse the field.
 */
export const CODEHOST_TOKENS_CAPABILITY = 'codehost.tokens';
/** One repository's installation token as the server hands it to a runner: never in args, rows or logs. */
export const codehostToken = z.strictObject({ kind: z.literal('gitlab').optional(), repo: z.string().max(1024).regex(GITLAB_PATH), token: z.string().regex(/^[\x21-\x7e]{8,1024}$/), expiresAt: z.iso.datetime({ offset: true }) });
export type CodehostToken = z.infer<typeof codehostToken>;
export const MAX_CODEHOST_TOKENS = 200;
const codehostTokens = z.array(codehostToken).max(MAX_CODEHOST_TOKENS).optional();
/**
 * The runner answers a command it has seen before (same requestId) with its first answer, never running
 * it twice: the server may then send again a command whose answer was lost with a socket (a replica went
 * away mid-command). Runners without it get again only read-only commands (READ_ONLY_COMMANDS).
 */
export const REPLAY_CAPABILITY = 'commands.replay';
/**
 * The runner reports its usable runtime profiles in a `profiles` frame after hello and whenever they
 * change (docs/runner.md, "Agent runtimes reported"). A runner without this capability (older) reports
 * nothing: the server stores its profiles as unknown (null), never as "none". A separate frame rather
 * than a hello field, because an older server's strict hello schema would refuse the whole hello; it
 * answers the unknown frame with an `invalid_frame` error instead, which the runner only logs.
 */
export const PROFILES_CAPABILITY = 'profiles';
/** One usable runtime profile as reported: configured in runner.json and its binary found on the machine. */
export const reportedProfile = z.strictObject({
  name: z.string().min(1).max(64),
  runtime: z.string().min(1).max(32),
  authenticated: z.boolean(),
});
export type ReportedProfile = z.infer<typeof reportedProfile>;
export const MAX_REPORTED_PROFILES = 32;
/**
 * The runner answers project.inspect (it is not in its `disabledCommands`), so the server checks a
 * project's root there: on create and change, and on connect for the roots it could not check while the
 * runner was offline (functions/projects/root-check.ts). Runners without it leave their roots unchecked.
 */
export const ROOTS_CAPABILITY = 'roots.check';
/**
 * Runner pools (issue #37; docs/runner.md "Runner pools"): the runner reports its capacity in a `capacity`
 * frame after hello and whenever the number of runs it holds changes, takes `runId` in skill.run (a pool
 * run's id, chosen by the server) and `pool: true` on watch-list entries. Only runners that announce it
 * are sent pool runs.
 */
export const POOL_CAPABILITY = 'skills.pool';
/** The runner answers pr.describe (the cost block in a pull request's description, docs/cost.md): the server
 *  sends it only to runners that announce this. */
export const PR_DESCRIBE_CAPABILITY = 'pr.describe';
/** A runner tag (PATCH /api/runners/:runnerId, `svc-runner pair --tags`): a lowercase word. */
export const RUNNER_TAG = /^[a-z0-9][a-z0-9_-]{0,31}$/;
export const runnerTag = z.string().regex(RUNNER_TAG, { message: 'must be a lowercase word (a-z 0-9 _ -, at most 32, starting with a letter or digit)' });
export const MAX_RUNNER_TAGS = 16;
export const runnerTags = z.array(runnerTag).max(MAX_RUNNER_TAGS, { message: `at most ${MAX_RUNNER_TAGS} tags` });

/** A terminal channel (terminal.attach): the server names it, both sides address frames with it. */
export const termChannel = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/);
/** Largest piece of terminal input or output in one frame. */
export const MAX_TERM_DATA = 64 * 1024;

const commandError = z.strictObject({ code: z.string().max(64), message: z.string().max(2000) });

export const runnerFrame = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('hello'),
    version: z.string().max(64),
    target: z.string().max(64),
    hostname: z.string().max(255),
    capabilities: z.array(z.string().max(64)).max(64),
  }),
  z.strictObject({ type: z.literal('events'), events: z.array(runnerEvent).min(1).max(MAX_BATCH) }),
  z.strictObject({ type: z.literal('profiles'), profiles: z.array(reportedProfile).max(MAX_REPORTED_PROFILES) }),
  /** POOL_CAPABILITY: skills.maxConcurrentRuns and the runs it holds now (starting or running; queued ones are not counted). */
  z.strictObject({ type: z.literal('capacity'), maxConcurrentRuns: z.number().int().min(1).max(32), running: z.number().int().min(0).max(10_000) }),
  // A command's answer: `ok: true` with `data`, or `ok: false` with `error`.
  z
    .strictObject({ type: z.literal('result'), requestId: z.string().max(64), ok: z.boolean(), data: z.unknown().optional(), error: commandError.optional() })
    .refine((r) => (r.ok ? r.error === undefined : r.error !== undefined), { message: 'ok results carry data, failed ones an error' }),
  z.strictObject({ type: z.literal('ping') }),
  z.strictObject({ type: z.literal('term.output'), channel: termChannel, data: z.string().max(MAX_TERM_DATA) }),
  z.strictObject({ type: z.literal('term.exit'), channel: termChannel, reason: z.string().max(500) }),
]);
export type RunnerFrame = z.infer<typeof runnerFrame>;

export const serverFrame = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('welcome'),
    runnerId: z.string(),
    serverTime: z.string(),
    projects: z.array(watchedProject),
  }),
  z.strictObject({ type: z.literal('ack'), ids: z.array(eventId).max(MAX_BATCH) }),
  z.strictObject({
    type: z.literal('command'),
    requestId: z.string().max(64),
    name: z.enum(COMMAND_NAMES),
    args: z.unknown(),
    timeoutMs: z.number().int().positive(),
    /** The installation tokens of the repositories the command acts on (App mode), outside its args. */
    codehost: codehostTokens,
  }),
  /** `codehost`, when present, is the whole set of the runner's App tokens (absent: no news about them). */
  z.strictObject({ type: z.literal('projects'), projects: z.array(watchedProject), codehost: codehostTokens }),
  z.strictObject({ type: z.literal('pong') }),
  z.strictObject({ type: z.literal('error'), code: z.string(), message: z.string() }),
  z.strictObject({ type: z.literal('term.input'), channel: termChannel, data: z.string().min(1).max(MAX_TERM_DATA) }),
  z.strictObject({ type: z.literal('term.resize'), channel: termChannel, cols: z.number().int().min(2).max(1000), rows: z.number().int().min(2).max(1000) }),
  z.strictObject({ type: z.literal('term.close'), channel: termChannel }),
]);
export type ServerFrame = z.infer<typeof serverFrame>;

/** Parse one text frame; `{ invalid: reason }` (never a throw) for anything malformed, unknown or oversized. */
export function parseFrame<S extends z.ZodType>(schema: S, data: string): z.infer<S> | { invalid: string } {
  if (data.length > MAX_FRAME_BYTES) return { invalid: `frame larger than ${MAX_FRAME_BYTES} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(data);
  } catch {
    return { invalid: 'frame is not JSON' };
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) return { invalid: parsed.error.issues.map((i) => `${i.path.join('.') || 'frame'}: ${i.message}`).join('; ').slice(0, 500) };
  return parsed.data;
}

/** Pairing: `POST /runners/pair` body and answer. */
export const PAIRING_CODE = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;
export const pairRequest = z.strictObject({
  code: z.string().regex(PAIRING_CODE, { message: 'must be a pairing code like ABCD-2345' }),
  hostname: z.string().max(255).default(''),
  version: z.string().max(64).default(''),
  target: z.string().max(64).default(''),
  /** `svc-runner pair --tags a,b`: the runner's tags (replacing any it had). */
  tags: runnerTags.optional(),
});
/**
 * The server's answer to a pairing request, as the runner reads it: fields it does not know are ignored,
 * not refused, because the single-use code is already spent when the answer arrives (a server of a later
 * version may say more).
 */
export const pairResponse = z.object({ runnerId: z.string().min(1), token: z.string().min(1) });
