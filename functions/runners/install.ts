// Installing the runner on an agent machine (docs/runner.md, "Install"): the server publishes the one
// bundle file (GET /svc-runner.mjs, a static file), its SHA-256 (GET /svc-runner.mjs.sha256, in the
// `sha256sum` format) and a POSIX shell installer (GET /install-runner.sh) that the Runners page shows
// as `curl -fsSL <base>/install-runner.sh | sh`. The installer, in order:
//   1. checks that Node.js 20 or newer is on PATH;
//   2. creates the install directory (SVC_RUNNER_DIR, default ~/.local/bin; its legacy name
//      AGENT_FLEET_RUNNER_DIR is taken with a warning, protocol/legacy-env.ts);
//   3. downloads the bundle to a temporary file beside the target and its published SHA-256;
//   4. verifies the checksum (sha256sum, shasum -a 256, or node as a last resort) and refuses a mismatch;
//   5. moves the file into place (atomic rename), makes it executable, prints its version;
//   6. says what to add to PATH when the directory is not on it.
// Any failure leaves no partial file behind and exits non-zero with one line saying what failed.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { route } from '../lib/context.ts';
import type { Route } from '../lib/context.ts';
import type { Config } from '../lib/config.ts';
import { HttpError } from '../lib/errors.ts';
import { respond } from '../lib/respond.ts';
import { USER_ENV, deprecationWarning, legacyEnvName } from '../../protocol/legacy-env.ts';
import { VERSION, legacyNamesLive } from '../../protocol/version.ts';
import { publicBase } from '../lib/urls.ts';
import { webDir } from '../static.ts';

let cached: { mtimeMs: number; size: number; sha256: string } | null = null;

/** The SHA-256 of the bundle the server serves, recomputed only when the file changes. */
export async function bundleSha256(config: Config): Promise<string> {
  const file = join(webDir(config), 'svc-runner.mjs');
  const info = await stat(file).catch(() => null);
  if (!info) throw new HttpError(404, 'not_found', 'this server has no runner bundle (run the build)');
  if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.sha256;
  const sha256 = createHash('sha256').update(await readFile(file)).digest('hex');
  cached = { mtimeMs: info.mtimeMs, size: info.size, sha256 };
  return sha256;
}

/**
 * The version of the runner bundle this server serves at GET /svc-runner.mjs, or null when it serves
 * none. The bundle is built with the server from the same package version (esbuild.config.mjs), so
 * it is the server's own version.
 */
export async function servedRunnerVersion(config: Config): Promise<string | null> {
  const info = await stat(join(webDir(config), 'svc-runner.mjs')).catch(() => null);
  return info?.isFile() ? VERSION : null;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The installer's legacy names (the table's `installer` rows): taken over unless the svc name is set,
 *  with one warning on stderr either way. Empty from runner version 0.16.0 on. */
function legacyLines(version?: string): string {
  if (!legacyNamesLive(version)) return '';
  return USER_ENV.filter((v) => v.readBy === 'installer')
    .map((v) => {
      const legacy = legacyEnvName(v.name);
      const warn = (used: boolean) => `echo ${shellQuote(`svc-runner install: warning: ${deprecationWarning({ legacy, name: v.name, used })}`)} >&2`;
      return `if [ -n "\${${legacy}:-}" ]; then
  if [ -n "\${${v.name}:-}" ]; then ${warn(false)}
  else ${v.name}="\$${legacy}"; ${warn(true)}; fi
fi
`;
    })
    .join('');
}

export function installScript(base: string, version?: string): string {
  return `#!/bin/sh
# svc runner installer, served by ${base}
# Installs ONE file: \${SVC_RUNNER_DIR:-$HOME/.local/bin}/svc-runner (Node.js 20 or newer runs it).
set -eu
BASE=${shellQuote(base)}
${legacyLines(version)}DIR="\${SVC_RUNNER_DIR:-$HOME/.local/bin}"
fail() { echo "svc-runner install: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "Node.js is not installed (need 20 or newer): https://nodejs.org/"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$major" -ge 20 ] 2>/dev/null || fail "Node.js $(node --version 2>/dev/null) is too old: svc-runner needs 20 or newer"
if command -v curl >/dev/null 2>&1; then get() { curl -fsSL "$1" -o "$2"; }
elif command -v wget >/dev/null 2>&1; then get() { wget -q "$1" -O "$2"; }
else fail "neither curl nor wget is installed"; fi

mkdir -p "$DIR" || fail "cannot create $DIR"
tmp="$DIR/.svc-runner.download.$$"
sum="$DIR/.svc-runner.sha256.$$"
trap 'rm -f "$tmp" "$sum"' EXIT INT TERM
get "$BASE/svc-runner.mjs" "$tmp" || fail "cannot download $BASE/svc-runner.mjs"
get "$BASE/svc-runner.mjs.sha256" "$sum" || fail "cannot download $BASE/svc-runner.mjs.sha256"
want=$(cut -d' ' -f1 "$sum")
if command -v sha256sum >/dev/null 2>&1; then have=$(sha256sum "$tmp" | cut -d' ' -f1)
elif command -v shasum >/dev/null 2>&1; then have=$(shasum -a 256 "$tmp" | cut -d' ' -f1)
else have=$(node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$tmp"); fi
[ -n "$want" ] && [ "$have" = "$want" ] || fail "checksum mismatch: the download is not the bundle the server publishes (got $have, expected $want); nothing installed"
chmod 755 "$tmp"
mv -f "$tmp" "$DIR/svc-runner"
echo "installed $DIR/svc-runner ($("$DIR/svc-runner" version)), sha256 $want"
case ":$PATH:" in
  *":$DIR:"*) ;;
  *) echo "note: $DIR is not on your PATH; add it with:  echo 'export PATH=\\"$DIR:\\$PATH\\"' >> ~/.profile  (then open a new shell), or call $DIR/svc-runner" ;;
esac
`;
}

const text = (body: string, type = 'text/plain; charset=utf-8') => respond(body, 200, { 'content-type': type, 'cache-control': 'no-cache' });

export const routes: Route[] = [
  route({ method: 'GET', path: '/svc-runner.mjs.sha256', tag: 'runners', access: 'public',
    summary: 'SHA-256 of the runner bundle served at /svc-runner.mjs, as `sha256sum` prints it',
    async handler(_input, ctx) {
      return text(`${await bundleSha256(ctx.config)}  svc-runner.mjs\n`);
    },
  }),
  route({ method: 'GET', path: '/install-runner.sh', tag: 'runners', access: 'public',
    summary: 'POSIX shell installer for the runner: checks Node.js 20+, downloads the bundle, verifies its SHA-256, installs it',
    async handler({ request }, ctx) {
      return text(installScript(publicBase(ctx.config, request)), 'text/x-shellscript; charset=utf-8');
    },
  }),
];
