// The daemon's local channel (docs/runner.md, "Local requests"): a Unix socket `<state>/svc/local/
// runner.sock` in a directory only the runner's user may enter (0700; the socket itself 0600), for the
// agent commands that need what only the running daemon holds — `svc-runner pr-merge <N>`, which merges
// through the project's code host with the token the server sent for that project (kept in the daemon's
// memory, never on disk), `svc-runner pr-create`, which pushes a slot's branch and opens its pull or
// merge request with that token, and the reads of issues and pull requests the agents' skills make. One JSON line each way: a request, then its answer, then the
// connection closes. Only the requests below exist; the project is named by its root, which must be a
// project on the daemon's watch list.
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import * as z from 'zod';
import { stateDir } from './paths.ts';
import type { Env } from './paths.ts';

export const localSocketPath = (env: Env) => join(stateDir(env), 'local', 'runner.sock');

/** Longer paths do not fit a Unix socket address (108 bytes on Linux, 104 on macOS). */
const MAX_SOCKET_PATH = 100;
const MAX_LINE = 64 * 1024;

/** The project's root (the main checkout, not a slot's worktree). */
const root = z.string().min(1).max(4096);
const number = z.number().int().min(1).max(2 ** 31 - 1);
export const localRequest = z.discriminatedUnion('op', [
  z.object({ op: z.literal('pr.merge'), root, number }),
  // `svc-runner pr-create`: push a slot's branch and open its pull or merge request (or find the open one).
  z.object({
    op: z.literal('pr.create'),
    root,
    branch: z.string().min(1).max(255).regex(/^(?!-)[A-Za-z0-9._/-]+$/, { message: 'must be a branch name' }),
    title: z.string().trim().min(1).max(256),
    body: z.string().max(60_000),
  }),
  // The agents' reads of the code host (`svc-runner issue-list | issue-view <N> | pr-list | pr-view <N>`),
  // for GitHub and GitLab alike, with the project's token, instead of `gh`.
  z.object({ op: z.literal('issue.list'), root }),
  z.object({ op: z.literal('pr.list'), root }),
  z.object({ op: z.literal('issue.view'), root, number }),
  z.object({ op: z.literal('pr.view'), root, number }),
]);
export type LocalRequest = z.infer<typeof localRequest>;

export type LocalAnswer = { ok: true; result: unknown } | { ok: false; code: string; message: string };

/** Serve the local channel (the caller holds the runner lock, so a socket file left there is stale). */
export async function serveLocal(env: Env, handle: (req: LocalRequest) => Promise<LocalAnswer>, warn: (message: string) => void): Promise<() => void> {
  const path = localSocketPath(env);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    warn(`the local channel's socket path is too long (${path}); svc-runner pr-merge cannot reach this daemon`);
    return () => {};
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  chmodSync(dirname(path), 0o700);
  rmSync(path, { force: true });
  const server = net.createServer((sock) => {
    let buf = '';
    sock.setEncoding('utf8');
    const answer = (a: LocalAnswer) => sock.end(JSON.stringify(a) + '\n');
    sock.on('error', () => sock.destroy());
    sock.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > MAX_LINE) return answer({ ok: false, code: 'invalid', message: 'request too long' });
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      sock.removeAllListeners('data');
      let parsed: z.ZodSafeParseResult<LocalRequest> | null = null;
      try {
        parsed = localRequest.safeParse(JSON.parse(buf.slice(0, nl)));
      } catch {
        parsed = null;
      }
      if (!parsed?.success) return answer({ ok: false, code: 'invalid', message: `invalid request${parsed ? ` (${parsed.error.issues[0]?.path.join('.') || 'body'})` : ''}` });
      handle(parsed.data).then(answer, (e) => answer({ ok: false, code: 'failed', message: e instanceof Error ? e.message : String(e) }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => (server.off('error', reject), resolve()));
  });
  chmodSync(path, 0o600);
  server.unref();
  return () => {
    server.close();
    rmSync(path, { force: true });
  };
}

/** Ask the running daemon; `null` when no daemon listens (none running, or one older than this channel). */
export function askDaemon(env: Env, req: LocalRequest, timeoutMs = 120_000): Promise<LocalAnswer | null> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(localSocketPath(env));
    let buf = '';
    sock.setEncoding('utf8');
    sock.setTimeout(timeoutMs, () => (sock.destroy(), reject(new Error(`the runner daemon did not answer within ${timeoutMs / 1000} s`))));
    sock.on('connect', () => sock.write(JSON.stringify(req) + '\n'));
    sock.on('data', (c: string) => (buf += c));
    sock.on('error', (e: NodeJS.ErrnoException) => (['ENOENT', 'ECONNREFUSED', 'ENOTDIR'].includes(e.code ?? '') ? resolve(null) : reject(e)));
    sock.on('end', () => {
      try {
        resolve(JSON.parse(buf) as LocalAnswer);
      } catch {
        reject(new Error('the runner daemon answered something that is not JSON'));
      }
    });
  });
}

/**
 * A CLI command's request to the daemon, its answer printed: the result as one JSON line (exit 0), or
 * why not on stderr (exit 1: no daemon, no answer, a refusal with its code).
 */
export async function askAndPrint(env: Env, req: LocalRequest, command: string, out: { write: (s: string) => unknown }, err: { write: (s: string) => unknown }): Promise<number> {
  let answer;
  try {
    answer = await askDaemon(env, req);
  } catch (e) {
    err.write(`svc-runner: ${command}: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  }
  if (!answer) {
    err.write(`svc-runner: ${command}: the runner daemon is not running (or is older than ${command}): start it with \`svc-runner run\`; it holds the code-host token\n`);
    return 1;
  }
  if (!answer.ok) {
    err.write(`svc-runner: ${command}: ${answer.message} [${answer.code}]\n`);
    return 1;
  }
  out.write(JSON.stringify(answer.result) + '\n');
  return 0;
}
