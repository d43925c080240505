// A PostgreSQL cluster of a test's own (initdb + pg_ctl on a free port and a temporary directory), for
// tests that stop and start the database under the server: never the shared server other tests use.
// Run by the postgres user: initdb refuses root.
// needs: initdb
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../otlp/_otlp.ts';

export const PG_BIN = (() => {
  const base = '/usr/lib/postgresql';
  const version = existsSync(base) ? readdirSync(base).sort().at(-1) : undefined;
  return version ? join(base, version, 'bin') : '';
})();

export interface PrivateCluster {
  url: string;
  /** Resolves once the server accepts connections (pg_ctl -w). Asynchronous, so a test's own clients keep running meanwhile. */
  start: () => Promise<void>;
  /** `fast`: clients are told (57P01) and the server stops cleanly; `immediate`: as in a crash (recovery at the next start). */
  stop: (mode?: 'fast' | 'immediate') => Promise<void>;
  remove: () => void;
}

export async function privateCluster(): Promise<PrivateCluster> {
  // Under the system's temporary directory, not the project's .tmp: the postgres user must be able to reach
  // it, and a checkout's parent directories (or .tmp itself) may be closed to other users.
  const dir = mkdtempSync(join(tmpdir(), 'svc-pgcluster-'));
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })));
  const port = await freePort();
  const data = join(dir, 'data');
  const asPostgres = (cmd: string, args: string[]) => {
    const r = spawnSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args], { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  };
  const pgCtl = (args: string[]) =>
    new Promise<void>((resolve, reject) =>
      execFile('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), ...args], { encoding: 'utf8', cwd: dir }, (err, stdout, stderr) =>
        err ? reject(new Error(`pg_ctl ${args.join(' ')}: ${stdout}${stderr}`)) : resolve(),
      ),
    );
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const start = () => pgCtl(['-D', data, '-l', join(dir, 'server.log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, '-w', '-t', '60', 'start']);
  const stop = (mode: 'fast' | 'immediate' = 'fast') => pgCtl(['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    remove: () => (spawnSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop']), rmSync(dir, { recursive: true, force: true })),
  };
}
