// The floor of a transcript scan in Node, for bench/usage.mjs (issue #14: "where a dependency itself is the
// limit, show it with a minimal app measured in the same run"). It reads the same files as
// `svc-runner usage` does (CLAUDE_CONFIG_DIR/projects/**/*.jsonl, CODEX_HOME/{sessions,archived_sessions}/**),
// with the same synchronous reads into one reused 1 MiB buffer, and splits them into lines. Then:
//
//   node bench/usage-floor.mjs read    only that: the I/O and line splitting, nothing parsed
//   node bench/usage-floor.mjs parse   also JSON.parse of every line that can carry usage (ccusage's
//                                      `"usage":{` pre-filter for Claude, `"token_count"` for Codex),
//                                      decoded as latin1 the way runner/runtimes/claude/transcript.ts does it
//
// `parse` is the least any exact scan in JavaScript does: a line that counts must be valid JSON (ccusage
// rejects one that is not), and JSON.parse is V8's fastest way to find out. No dedup, no prices, no rows: it
// prints the number of lines, parsed lines and corrupt lines as one JSON line.
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';

const mode = process.argv[2] ?? 'parse';
if (mode !== 'read' && mode !== 'parse') {
  process.stderr.write(`usage: node bench/usage-floor.mjs read|parse (got ${mode})\n`);
  process.exit(2);
}

function walk(dir, out) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith('.jsonl')) out.push(p);
  }
  return out;
}

const list = (v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const claude = list(process.env.CLAUDE_CONFIG_DIR).flatMap((d) => walk(join(d, 'projects'), []));
const codex = list(process.env.CODEX_HOME).flatMap((h) => [...walk(join(h, 'sessions'), []), ...walk(join(h, 'archived_sessions'), [])]);

const USAGE = Buffer.from('ge":{'); // the tail of `"usage":{`, as claude.ts hasUsageMarker looks for it
const TOKEN_COUNT = Buffer.from('"token_count"');
let lines = 0, parsed = 0, corrupt = 0;

function hasUsage(b) {
  for (let from = 4; ; ) {
    const i = b.indexOf(USAGE, from);
    if (i === -1) return false;
    if (b[i - 4] === 0x22 && b[i - 3] === 0x75 && b[i - 2] === 0x73 && b[i - 1] === 0x61) return true;
    from = i + 1;
  }
}

function onLine(b, codexLine) {
  lines++;
  if (mode === 'read' || !(codexLine ? b.indexOf(TOKEN_COUNT) !== -1 : hasUsage(b))) return;
  try {
    JSON.parse(b.latin1Slice(0, b.length));
    parsed++;
  } catch {
    corrupt++;
  }
}

const buf = Buffer.allocUnsafe(1 << 20);
function readFile(file, codexLine) {
  const fd = openSync(file, 'r');
  try {
    let pending = null;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      let start = 0;
      for (let nl = buf.indexOf(10); nl !== -1 && nl < n; nl = buf.indexOf(10, start)) {
        const piece = buf.subarray(start, nl);
        onLine(pending ? Buffer.concat([pending, piece]) : piece, codexLine);
        pending = null;
        start = nl + 1;
      }
      if (start < n) pending = pending ? Buffer.concat([pending, buf.subarray(start, n)]) : Buffer.from(buf.subarray(start, n));
    }
    if (pending) onLine(pending, codexLine);
  } finally {
    closeSync(fd);
  }
}

for (const f of claude) readFile(f, false);
for (const f of codex) readFile(f, true);
process.stdout.write(`${JSON.stringify({ mode, files: claude.length + codex.length, lines, parsed, corrupt })}\n`);
