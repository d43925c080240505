// A git server over HTTPS on loopback, for pushes the way a self-managed GitLab takes them (issue 42):
// git's smart HTTP protocol served by the real `git http-backend` (CGI) behind a Node https server with
// the test CA's certificate (test-ca.ts). Every request must carry `Authorization: Basic
// base64(<user>:<token>)`; otherwise 401 with a WWW-Authenticate challenge, as GitLab answers. Bare
// repositories live under `<dir>/<group>/<name>.git`; `url(path)` is what a project's `origin` is.
// needs: git
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface GitHttps {
  url: (path: string) => string;
  /** Every request: its path and the credentials it carried (user and token, decoded). */
  requests: { method: string; path: string; user: string | null; token: string | null; status: number }[];
  /** A bare repository for `path` (`group/sub/app`), seeded with `from`'s current branch as main. */
  repo: (path: string, from: string) => { branch: (name: string) => string | null };
  close: () => Promise<void>;
}

export async function gitHttps(dir: string, tls: { key: string; cert: string }, auth: { user: string; token: string }): Promise<GitHttps> {
  const requests: GitHttps['requests'] = [];
  const server = https.createServer(tls, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [user, token] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(/:(.*)/s) : [null, null];
    const rec = { method: req.method ?? '', path: url.pathname, user: user ?? null, token: token ?? null, status: 0 };
    requests.push(rec);
    if (user !== auth.user || token !== auth.token) {
      rec.status = 401;
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitLab"', 'content-type': 'text/plain' });
      return res.end('HTTP Basic: Access denied\n');
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: dir,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_USER: user ?? '',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString('utf8').split('\r\n')) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else headers[k] = v;
      }
      rec.status = status;
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!started) {
        rec.status = 500;
        res.writeHead(500);
      }
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path) => `${origin}/${path}.git`,
    requests,
    repo(path, from) {
      const bare = join(dir, `${path}.git`);
      mkdirSync(bare, { recursive: true });
      execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
      execFileSync('git', ['config', 'http.receivepack', 'true'], { cwd: bare });
      execFileSync('git', ['push', '-q', bare, 'HEAD:refs/heads/main'], { cwd: from });
      return {
        branch: (name) => {
          try {
            return execFileSync('git', ['rev-parse', '--verify', '-q', `refs/heads/${name}`], { cwd: bare, encoding: 'utf8' }).trim();
          } catch {
            return null;
          }
        },
      };
    },
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
