// What the test suite needs besides Node, and what the driver (scripts/test.mjs) does about it.
//
// A test file, or a local module it imports (a helper such as test/helpers/browser.ts), declares the
// programs it runs in a comment line `// needs: tmux git`. The driver follows relative imports, so a
// need is declared once where the program is used. Before running, it looks each needed program up:
//   1. missing ones are installed with apt-get when the driver runs as root on Debian (the one list of
//      Debian packages the suite uses is TOOLS below; `.ci/run` installs nothing of its own);
//   2. what is still missing (not root, no apt, SVC_TEST_NO_INSTALL=1, or the install failed) makes the
//      driver skip only the files that need it, say which and why, and count their tests as skipped.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, readdirSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';

/** Program → the Debian packages that bring it (and what else it needs to work). */
export const TOOLS = {
  tmux: ['tmux'],
  sqlite3: ['sqlite3'], // OpenCode's store: the fixtures and fake opencode write it, the runner reads it on Node < 22.5
  git: ['git'],
  curl: ['curl', 'ca-certificates'],
  openssl: ['openssl'],
  pg_dump: ['postgresql-client'],
  pg_restore: ['postgresql-client'],
  chromium: ['chromium'],
  'systemd-analyze': ['systemd'],
  unshare: ['util-linux'],
  ruby: ['ruby'], // `ruby -c` checks the Homebrew formula
  'docker-compose': ['docker-compose'], // `docker-compose config` validates compose.yaml
  haproxy: ['haproxy'], // scripts/cluster.sh, the replicas' balancer
  nginx: ['nginx'], // docs/examples/nginx.conf, the TLS balancer
  initdb: ['postgresql'], // private PostgreSQL clusters (server binaries under /usr/lib/postgresql/*/bin)
  prometheus: ['prometheus'], // test/metrics/prometheus.test.ts scrapes GET /metrics with the real server
  promtool: ['prometheus'], // `promtool check metrics` / `check rules` (GET /metrics, docs/prometheus/alerts.yml)
};

const NEEDS = /^\s*\/\/\s*needs:\s*(.+)$/gm;
const IMPORT = /^\s*(?:import|export)\b[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|^\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The programs a file and the local modules it imports (transitively) declare with `// needs:`. */
export function needsOf(file, seen = new Map()) {
  const path = resolve(file);
  if (seen.has(path)) return seen.get(path);
  const found = new Set();
  seen.set(path, found);
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return found; // an import of a non-source file (json, a fixture) declares nothing
  }
  for (const m of text.matchAll(NEEDS)) {
    for (const name of m[1].split(/[\s,]+/).filter(Boolean)) {
      if (!(name in TOOLS)) throw new Error(`${file}: unknown tool "${name}" in a "// needs:" line (known: ${Object.keys(TOOLS).join(', ')})`);
      found.add(name);
    }
  }
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    if (/\.(ts|mjs|js)$/.test(spec)) for (const n of needsOf(join(dirname(path), spec), seen)) found.add(n);
  }
  return found;
}

function onPath(name) {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether a program can be run here. The PostgreSQL server's binaries are not on PATH in Debian. */
export function available(tool) {
  if (tool === 'initdb') {
    const base = '/usr/lib/postgresql';
    return onPath('initdb') || (existsSync(base) && readdirSync(base).some((v) => existsSync(join(base, v, 'bin', 'initdb'))));
  }
  return onPath(tool);
}

/** Why the driver may not install: undefined when it may (root, apt-get present, not switched off). */
export function whyNoInstall(env = process.env) {
  if (env.SVC_TEST_NO_INSTALL === '1') return 'SVC_TEST_NO_INSTALL=1';
  if (process.getuid?.() !== 0) return 'not running as root';
  if (!onPath('apt-get')) return 'no apt-get (not Debian)';
  return undefined;
}

/**
 * Installs the Debian packages of the missing tools when it may. Returns the tools still missing, each
 * with the reason, for the driver to skip what needs them.
 */
export function ensureTools(tools, log = console.log) {
  let missing = [...tools].filter((t) => !available(t));
  if (!missing.length) return new Map();
  const why = whyNoInstall();
  if (!why) {
    const pkgs = [...new Set(missing.flatMap((t) => TOOLS[t]))];
    log(`installing what the tests need (${missing.join(', ')}): apt-get install ${pkgs.join(' ')}`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const run = (args) => spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0;
    if (!(run(['install', '-y', '-qq', '--no-install-recommends', ...pkgs]) || (run(['update', '-qq']) && run(['install', '-y', '-qq', '--no-install-recommends', ...pkgs])))) {
      log(`apt-get install ${pkgs.join(' ')} failed`);
    }
    missing = missing.filter((t) => !available(t));
    return new Map(missing.map((t) => [t, `apt-get install ${TOOLS[t].join(' ')} failed`]));
  }
  return new Map(missing.map((t) => [t, `not installed, and the driver does not install it: ${why} (apt-get install ${TOOLS[t].join(' ')})`]));
}

/** How many tests a skipped file registers, read from its source since it is not run: its `test(` calls. */
export function countTests(file) {
  return Math.max(1, (readFileSync(file, 'utf8').match(/^\s*test(?:\.only)?\(/gm) ?? []).length);
}
