// scripts/cluster.sh for the tests of the scale-out topology (cluster.test.ts, rebalance.test.ts): a
// command's exit code and its output (stdout and stderr as they came), killed after `timeoutMs`.
// needs: haproxy
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { ROOT } from '../helpers/db.ts';

const SCRIPT = join(ROOT, 'scripts', 'cluster.sh');

export function cluster(args: string[], env: Record<string, string>, timeoutMs = 180_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(SCRIPT, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (out += c));
    const t = setTimeout(() => (p.kill('SIGKILL'), reject(new Error(`cluster.sh ${args.join(' ')} did not finish:\n${out}`))), timeoutMs);
    p.on('close', (code) => (clearTimeout(t), resolve({ code, out })));
  });
}

/** The balancer's URL from `up`'s last line (BALANCER=…). */
export const balancerOf = (out: string) => out.trim().split('\n').at(-1)!.slice('BALANCER='.length);

/**
 * GET `url` over `connections` keep-alive connections, one request after another on each, until `stop`:
 * the answers by status (0: none, the connection failed) and the first lines of every 5xx body (HAProxy's
 * own 503 says "No server is available to handle this request").
 */
export function hammer(url: string, opts: { connections?: number; ca?: string } = {}) {
  const secure = url.startsWith('https:');
  const agent = secure ? new https.Agent({ keepAlive: true, ca: opts.ca }) : new http.Agent({ keepAlive: true });
  const seen = { total: 0, byStatus: {} as Record<number, number>, errors: [] as string[] };
  let running = true;
  const once = () =>
    new Promise<void>((resolve) => {
      const req = (secure ? https : http).get(url, { agent }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => {
          if ((res.statusCode ?? 0) >= 500) seen.errors.push(`${res.statusCode} ${body.replace(/<[^>]+>/g, ' ').trim().slice(0, 120)}`);
          count(res.statusCode ?? 0);
          resolve();
        });
      });
      req.on('error', () => (count(0), resolve()));
    });
  const count = (status: number) => ((seen.total += 1), (seen.byStatus[status] = (seen.byStatus[status] ?? 0) + 1));
  const loops = Array.from({ length: opts.connections ?? 10 }, async () => {
    while (running) await once();
  });
  return { seen, stop: async () => ((running = false), await Promise.all(loops), agent.destroy(), seen) };
}
