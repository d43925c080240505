// The container image without a container engine (docs/operations.md "The container image, checked
// without a container engine"). This machine has no Docker daemon, so the Dockerfile is read and its
// stages are reproduced here: the build context is the checkout minus .dockerignore; each stage gets a
// root directory of its own with this machine's Debian /usr (read-only) and a copy of /etc standing in
// for the base image (node:22-bookworm-slim is Debian bookworm with Node; the `node` user, uid 1000, is
// added as that image has it); COPY copies exactly what it names; RUN runs as the Dockerfile says, as
// root, through /bin/sh -c, chrooted into the stage's root in a private mount namespace. The runtime
// stage then runs its CMD as its USER with its ENV, on a root that is read-only everywhere but the
// VOLUME, and its HEALTHCHECK command is executed. compose.yaml is validated by Debian's docker-compose.
// needs: docker-compose curl git
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT, freshPostgres, onlyOn, tempDir } from '../helpers/db.ts';
import { freePort } from '../otlp/_otlp.ts';
import { waitUntil } from '../runner/_harness.ts';
import { envPairs, ignoredBy, lint, parseDockerfile, readText } from './dockerfile.ts';
import type { Stage } from './dockerfile.ts';

const DOCKERFILE = readText(join(ROOT, 'Dockerfile'));
const DOCKERIGNORE = readText(join(ROOT, '.dockerignore'));
const stages = parseDockerfile(DOCKERFILE);

test('the Dockerfile passes the lint rules (docs/operations.md lists them)', () => {
  assert.equal(lint(stages, DOCKERIGNORE), []);
  assert.equal(stages.map((s) => [s.from, s.name]), [['node:22-bookworm-slim', 'build'], ['node:22-bookworm-slim', null]]);
});

test('the lint rules find what they are for', () => {
  const bad = parseDockerfile(
    ['FROM node:latest AS b', 'ADD https://example.test/x.tgz /x', 'WORKDIR app', 'RUN npm install', 'RUN apt-get update && apt-get install -y curl',
      'FROM node', 'ENV APP_ENCRYPTION_KEY=abc PORT=8080', 'COPY --from=nope /a /a', 'CMD node server.js'].join('\n'),
  );
  const found = lint(bad, 'dist\n').join('\n');
  for (const rule of ['DL3007', 'DL3020', 'DL3000', 'use npm ci', 'DL3015', 'DL3009', 'DL3006', 'looks like a secret', 'DL3022', 'DL3002', 'DL3025', 'HEALTHCHECK', 'STOPSIGNAL', 'EXPOSE the PORT', 'must list node_modules', 'must list env/*.env']) {
    assert.ok(found.includes(rule), `the rule ${rule} fires:\n${found}`);
  }
});

test('.dockerignore keeps local installs, history, secrets and data out of the build context', () => {
  const ignored = ignoredBy(DOCKERIGNORE);
  for (const p of ['node_modules/x/index.js', '.git/HEAD', 'env/api.env', 'data/pglite/PG_VERSION', 'dist/server.mjs', 'backups/a.dump', 'x.log']) assert.ok(ignored(p), p);
  for (const p of ['package.json', 'functions/server.ts', 'env/api.env.example', 'sql/0001_init.sql', 'Dockerfile']) assert.not.ok(ignored(p), p);
});

test('compose.yaml is valid: docker-compose config (Debian) accepts it, and the project name follows the compose rule', () => {
  const dir = tempDir('compose-');
  try {
    const text = readText(join(ROOT, 'compose.yaml'));
    // docker-compose 1.29 (Debian bookworm) predates the top-level `name` of the Compose Specification;
    // it is checked here by the specification's own rule and left out for the tool, which checks the rest.
    const name = /^name:\s*(\S+)\s*$/m.exec(text)?.[1];
    assert.ok(name && /^[a-z0-9][a-z0-9_-]*$/.test(name), `name: ${name}`);
    writeText(join(dir, 'compose.yaml'), text.replace(/^name:.*\n/m, ''));
    mkdirSync(join(dir, 'env'));
    for (const f of ['db.env', 'api.env']) cpSync(join(ROOT, 'env', `${f}.example`), join(dir, 'env', f));
    const r = spawnSync('docker-compose', ['-f', 'compose.yaml', 'config', '-q'], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    assert.is(r.error, undefined, 'docker-compose is installed (.ci/run installs Debian docker-compose)');
    assert.is(r.status, 0, r.stderr + r.stdout);
    // And it would refuse a broken file: the check can fail.
    writeText(join(dir, 'compose.yaml'), text.replace(/^name:.*\n/m, '').replace('healthcheck:', 'helthcheck:'));
    const bad = spawnSync('docker-compose', ['-f', 'compose.yaml', 'config', '-q'], { cwd: dir, encoding: 'utf8' });
    assert.is.not(bad.status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

function writeText(path: string, text: string) {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, text, { flag: 'w' });
}

// ---------------------------------------------------------------------------------------------------
// Reproducing the stages.

const NODE_UID = 1000;
/** The node image's PATH (docker inspect node:22-bookworm-slim). */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

interface StageState {
  root: string;
  workdir: string;
  env: Record<string, string>;
  user: string;
}

/** A root directory standing in for the base image: Debian's /usr (bound read-only when used), a copy of /etc with the node user. */
function baseRoot(dir: string): string {
  for (const d of ['usr', 'dev', 'proc', 'tmp', 'root', 'home/node']) mkdirSync(join(dir, d), { recursive: true });
  for (const l of ['bin', 'lib', 'lib64', 'sbin']) symlinkSync(`usr/${l}`, join(dir, l));
  const cp = spawnSync('cp', ['-a', '/etc/.', join(dir, 'etc')], { encoding: 'utf8' });
  if (cp.status !== 0) throw new Error(`copying /etc: ${cp.stderr}`);
  const passwd = readText(join(dir, 'etc', 'passwd'));
  if (!/^node:/m.test(passwd)) {
    appendFileSync(join(dir, 'etc', 'passwd'), `node:x:${NODE_UID}:${NODE_UID}::/home/node:/bin/sh\n`);
    appendFileSync(join(dir, 'etc', 'group'), `node:x:${NODE_UID}:\n`);
  }
  spawnSync('chown', [`${NODE_UID}:${NODE_UID}`, join(dir, 'home', 'node')]);
  return dir;
}

function uidOf(root: string, user: string): { uid: number; gid: number } {
  if (/^\d+$/.test(user)) return { uid: Number(user), gid: Number(user) };
  const line = readText(join(root, 'etc', 'passwd')).split('\n').find((l) => l.startsWith(`${user}:`));
  if (!line) throw new Error(`USER ${user}: no such user in the stage's /etc/passwd`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * argv (prefixed) that runs `cmd` chrooted into `root` in a private mount namespace: /usr read-only from
 * this machine, /dev, a fresh /proc; with `readOnly`, the whole root read-only but the `volumes`.
 */
function inRoot(st: StageState, cmd: string[], opts: { readOnly?: boolean; volumes?: string[]; binds?: [string, string][]; env?: Record<string, string> } = {}): string[] {
  const { uid, gid } = uidOf(st.root, st.user);
  const env = { PATH: IMAGE_PATH, HOME: st.user === 'root' ? '/root' : '/home/node', ...st.env, ...opts.env };
  const script = [
    'set -e',
    'r=$1; shift',
    'mount --make-rprivate /',
    ...(opts.readOnly ? ['mount --bind "$r" "$r"', 'mount -o remount,bind,ro "$r"'] : []),
    'mount --rbind /usr "$r/usr"',
    'mount -o remount,bind,ro "$r/usr"',
    'mount --rbind /dev "$r/dev"',
    'mount -t proc proc "$r/proc"',
    ...(opts.volumes ?? []).map((v) => `mount --bind "$r${v}" "$r${v}" && mount -o remount,bind,rw "$r${v}"`),
    ...(opts.binds ?? []).map(([from, to]) => `mount --bind '${from}' "$r${to}"`),
    `exec chroot --userspec=${uid}:${gid} "$r" /usr/bin/env -i -C '${st.workdir}' "$@"`,
  ].join('\n');
  return ['unshare', '-m', '/bin/sh', '-c', script, 'sh', st.root, ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...cmd];
}

/** Copy for COPY: `src` (file or directory) to `dest`, keeping symlinks as they are. */
function copyInto(src: string, dest: string, destIsDir: boolean) {
  const target = destIsDir && !statSync(src).isDirectory() ? join(dest, posix.basename(src)) : dest;
  mkdirSync(statSync(src).isDirectory() ? target : dirname(target), { recursive: true });
  cpSync(src, target, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
}

/** The build context: the checkout's files (tracked, and untracked ones git does not ignore) minus .dockerignore. */
function contextFiles(): string[] {
  const r = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ls-files: ${r.stderr}`);
  const ignored = ignoredBy(DOCKERIGNORE);
  return r.stdout.split('\0').filter((p) => p && !ignored(p) && existsSync(join(ROOT, p)));
}

/** Run a stage's instructions up to (not including) CMD: its root directory and state. */
async function buildStage(stage: Stage, built: Map<string, StageState>, work: string, log: string[]): Promise<StageState> {
  const st: StageState = { root: baseRoot(join(work, `stage-${stage.index}`)), workdir: '/', env: {}, user: 'root' };
  const context = contextFiles();
  for (const i of stage.instructions) {
    const inContainer = (p: string) => (p.startsWith('/') ? p : posix.join(st.workdir, p));
    if (i.op === 'WORKDIR') {
      st.workdir = inContainer(i.args[0]);
      mkdirSync(join(st.root, st.workdir), { recursive: true });
    } else if (i.op === 'ENV') {
      for (const [k, v] of envPairs(i)) st.env[k] = v;
    } else if (i.op === 'ARG') {
      // A build argument: its default (no --build-arg here), in the environment of the RUNs after it.
      const [k, v = ''] = i.args[0].split(/=(.*)/s);
      st.env[k] = v;
    } else if (i.op === 'USER') {
      st.user = i.args[0];
    } else if (i.op === 'COPY') {
      const srcs = i.args.slice(0, -1);
      const dest = join(st.root, inContainer(i.args.at(-1)!));
      const destIsDir = i.args.at(-1)!.endsWith('/') || i.args.at(-1) === '.' || srcs.length > 1;
      if (i.flags.from) {
        const from = built.get(i.flags.from);
        if (!from) throw new Error(`COPY --from=${i.flags.from}: no such stage`);
        for (const s of srcs) copyInto(join(from.root, s), dest, destIsDir);
      } else {
        for (const s of srcs) {
          const rel = posix.normalize(s).replace(/^\.\/?/, '');
          const files = rel === '' ? context : context.filter((f) => f === rel || f.startsWith(`${rel}/`));
          if (files.length === 0) throw new Error(`COPY ${s}: not in the build context`);
          for (const f of files) {
            const to = rel === '' ? join(dest, f) : destIsDir && f === rel ? join(dest, posix.basename(f)) : join(dest, f.slice(rel.length));
            mkdirSync(dirname(to), { recursive: true });
            cpSync(join(ROOT, f), to, { verbatimSymlinks: true, preserveTimestamps: true });
          }
        }
      }
    } else if (i.op === 'RUN') {
      const cmd = i.exec ? i.args : ['/bin/sh', '-c', i.text];
      // The npm cache of this machine stands in for the registry's answers (same packages, faster).
      const npmCache = join(process.env.HOME ?? '/root', '.npm');
      mkdirSync(join(st.root, 'root', '.npm'), { recursive: true });
      const binds: [string, string][] = st.user === 'root' && existsSync(npmCache) ? [[npmCache, '/root/.npm']] : [];
      const r = await run(inRoot(st, cmd, { binds }), 600_000);
      log.push(`RUN ${i.text}\n${r.out}`);
      if (r.code !== 0) throw new Error(`Dockerfile line ${i.line} RUN ${i.text} failed (${r.code}):\n${r.out.slice(-4000)}`);
    } else if (['VOLUME', 'EXPOSE', 'HEALTHCHECK', 'STOPSIGNAL', 'CMD'].includes(i.op)) {
      // Metadata: used when the stage runs.
    } else {
      throw new Error(`Dockerfile line ${i.line}: ${i.op} is not reproduced by this test; teach it first`);
    }
  }
  if (stage.name) built.set(stage.name, st);
  return st;
}

function run(argv: string[], timeoutMs: number): Promise<{ code: number | string; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (out += c));
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code, signal) => (clearTimeout(t), resolve({ code: code ?? signal ?? -1, out })));
  });
}

let work = '';
let runtime: StageState | null = null;
const runtimeStage = stages.at(-1)!;
const metadata = (op: string) => runtimeStage.instructions.filter((i) => i.op === op);

/** Start the runtime stage's CMD as its USER on a read-only root with its VOLUME(s) writable. */
async function startContainer(extraEnv: Record<string, string>) {
  const st = runtime!;
  const port = await freePort();
  // Docker would publish PORT; here the container shares this machine's network, so the test picks a free
  // port and keeps it on loopback.
  const env = { PORT: String(port), HOST: '127.0.0.1', ...extraEnv };
  const volumes = metadata('VOLUME').flatMap((v) => v.args);
  const argv = inRoot(st, metadata('CMD')[0].args, { readOnly: true, volumes, env });
  const p = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (c) => (out += c));
  p.stderr.on('data', (c) => (out += c));
  const exited = new Promise((r) => p.once('exit', r));
  const url = `http://127.0.0.1:${port}`;
  const healthcheck = () => run(inRoot(st, metadata('HEALTHCHECK')[0].args, { readOnly: true, volumes, env }), 30_000);
  const stop = async () => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
    await exited;
  };
  return { url, port, output: () => out, healthcheck, stop, exited, volumes };
}

onlyOn('postgres', test, 3, () => {
  test('the build stage as the Dockerfile runs it (npm ci, build, the runtime packages), then the runtime stage: only what it COPYs', async () => {
    work = tempDir('image-');
    const built = new Map<string, StageState>();
    const log: string[] = [];
    for (const s of stages.slice(0, -1)) await buildStage(s, built, work, log);
    runtime = await buildStage(runtimeStage, built, work, log);
    const app = join(runtime.root, runtime.workdir);
    assert.equal(readdirSync(app).sort(), ['dist', 'node_modules', 'package.json', 'sql']);
    assert.ok(existsSync(join(app, 'dist', 'server.mjs')));
    assert.ok(existsSync(join(app, 'dist', 'svc-runner.mjs')), 'the runner bundle it serves');
    // Pruned: no dev dependency made it into the image.
    for (const dev of ['typescript', 'esbuild', 'uvu', 'playwright-core', 'tsx']) assert.not.ok(existsSync(join(app, 'node_modules', dev)), `${dev} is a dev dependency`);
    // Only what dist/ loads by name (scripts/runtime-deps.mjs): the bundled dependencies stay out.
    for (const bundled of ['zod', 'preact', '@xterm', 'jose', 'itty-router', '@whatwg-node']) assert.not.ok(existsSync(join(app, 'node_modules', bundled)), `${bundled} is bundled`);
    assert.ok(existsSync(join(app, 'node_modules', 'postgres')));
    // The code is root's and read-only for the node user; /data is node's.
    assert.is(statSync(join(app, 'dist', 'server.mjs')).uid, 0);
    assert.is(statSync(join(runtime.root, 'data')).uid, NODE_UID);
    assert.is(runtime.user, 'node');
  });

  test('the runtime stage on PostgreSQL: as the node user on a read-only root, migrations run, /health and the admin pages answer, the HEALTHCHECK passes', async () => {
    assert.ok(runtime, 'the image was built by the test before');
    const pg = await freshPostgres();
    const c = await startContainer({ DATABASE_URL: pg.url });
    try {
      await waitUntil(() => fetch(`${c.url}/health`).then((r) => r.status === 200, () => false), 60_000, () => `/health\n${c.output()}`);
      const hc = await c.healthcheck();
      assert.is(hc.code, 0, `HEALTHCHECK: ${hc.out}`);
      const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
      const applied = await sql`select name from schema_migrations order by name`;
      await sql.end();
      const files = readdirSync(join(ROOT, 'sql')).filter((f) => /^\d{4}_.*\.sql$/.test(f)).sort();
      assert.equal(applied.map((r) => `${r.name}`.replace(/(\.sql)?$/, '.sql')), files);
      const page = await fetch(`${c.url}/`);
      assert.is(page.status, 200);
      const html = await page.text();
      const asset = /(?:src|href)="(\/[^"]+\.(?:js|css))"/.exec(html)?.[1];
      assert.ok(asset, `the page names its assets:\n${html.slice(0, 500)}`);
      const a = await fetch(`${c.url}${asset}`);
      assert.is(a.status, 200, asset);
      assert.ok((await a.text()).length > 100);
      assert.is((await fetch(`${c.url}/svc-runner.mjs`)).status, 200, 'the runner bundle is served');
      // The root is read-only for the server: nothing was written outside the volume.
      const probe = await run(inRoot(runtime!, ['/bin/sh', '-c', 'touch /app/x || exit 3; exit 0'], { readOnly: true, volumes: c.volumes }), 30_000);
      assert.is(probe.code, 3, 'the code cannot be written');
      assert.not.match(c.output(), /"level":"error"|EROFS|EACCES/);
    } finally {
      await c.stop();
      await pg.drop();
    }
    assert.match(c.output(), /listening/);
  });

  test('the runtime stage on its embedded database: PGlite in the /data volume, owned by the node user; a restart keeps the data', async () => {
    assert.ok(runtime, 'the image was built by the test before');
    const data = join(runtime!.root, 'data');
    const c = await startContainer({});
    try {
      await waitUntil(() => fetch(`${c.url}/health`).then((r) => r.status === 200, () => false), 90_000, () => `/health\n${c.output()}`);
      assert.is((await c.healthcheck()).code, 0);
      const pg = join(data, 'pglite');
      assert.ok(existsSync(join(pg, 'PG_VERSION')), 'PGlite made its data dir in the volume');
      assert.is(statSync(join(pg, 'PG_VERSION')).uid, NODE_UID);
      // The instance's first admin, through the CLI the docs name (`docker compose exec api node dist/server.mjs admin create …`),
      // needs the database the server holds: stop it first (PGlite is single-process), then create and restart.
    } finally {
      await c.stop();
    }
    const admin = await run(inRoot(runtime!, ['node', 'dist/server.mjs', 'admin', 'create', '--email', 'a@example.test', '--name', 'A'], { readOnly: true, volumes: ['/data'] }), 120_000);
    assert.is(admin.code, 0, admin.out);
    assert.match(admin.out, /set-password\?token=/);
    const again = await startContainer({});
    try {
      await waitUntil(() => fetch(`${again.url}/health`).then((r) => r.status === 200, () => false), 90_000, () => `/health\n${again.output()}`);
    } finally {
      await again.stop();
    }
    // The admin made before the restart is still there: a password link is made for it (an unknown e-mail fails).
    const cli = (email: string) => run(inRoot(runtime!, ['node', 'dist/server.mjs', 'admin', 'password-link', '--email', email], { readOnly: true, volumes: ['/data'] }), 120_000);
    const link = await cli('a@example.test');
    assert.is(link.code, 0, link.out);
    assert.match(link.out, /Password link for a@example\.test/);
    assert.is.not((await cli('nobody@example.test')).code, 0);
  });
});

test.after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test.run();
