// The Dockerfile as data, for the container tests (test/ops/container.test.ts, docs/operations.md
// "The container image without a container engine"): a parser for the instructions our Dockerfile uses,
// the lint rules it is held to, and the .dockerignore matcher that decides the build context.
// needs: curl
import { readFileSync } from 'node:fs';

export interface Instruction {
  op: string;
  /** The text after the keyword, continuation lines joined. */
  text: string;
  /** The arguments: the JSON array of an exec form, else the text split on blanks. */
  args: string[];
  /** `--name=value` flags (COPY --from, HEALTHCHECK --interval, …). */
  flags: Record<string, string>;
  /** Exec (JSON array) form rather than shell form. */
  exec: boolean;
  line: number;
}

export interface Stage {
  from: string;
  name: string | null;
  index: number;
  instructions: Instruction[];
}

/** Split a Dockerfile into stages of instructions (comments and blank lines dropped, `\` continuations joined). */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      line = line.replace(/\\\s*$/, ' ');
      i++;
      if (!/^\s*#/.test(lines[i])) line += lines[i].trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start + 1}: cannot parse "${line}"`);
    const op = m[1].toUpperCase();
    let rest = m[2].trim();
    const flags: Record<string, string> = {};
    // Flags come first; HEALTHCHECK's come before its CMD.
    for (let f = /^--([a-z-]+)=(\S+)\s+/.exec(rest); f; f = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
      flags[f[1]] = f[2];
      rest = rest.slice(f[0].length);
    }
    let body = rest;
    if (op === 'HEALTHCHECK' && /^CMD\s/.test(rest)) body = rest.slice(4).trim();
    const exec = body.startsWith('[');
    const args = exec ? (JSON.parse(body) as string[]) : body.split(/\s+/).filter(Boolean);
    const ins: Instruction = { op, text: rest, args, flags, exec, line: start + 1 };
    if (op === 'FROM') {
      const [from, as, name] = args;
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : null, index: stages.length, instructions: [] });
      continue;
    }
    if (stages.length === 0) throw new Error(`Dockerfile line ${start + 1}: ${op} before the first FROM`);
    stages.at(-1)!.instructions.push(ins);
  }
  return stages;
}

/** ENV a=b c=d (the key=value form; values may be double-quoted). */
export function envPairs(ins: Instruction): [string, string][] {
  const out: [string, string][] = [];
  for (const m of ins.text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|\S*)/g)) out.push([m[1], m[3] ?? m[2]]);
  return out;
}

const SECRETISH = /(SECRET|PASSWORD|TOKEN|ENCRYPTION_KEY|PRIVATE)/;

/**
 * The rules the Dockerfile is held to (hadolint is not in Debian's archive nor installable from npm
 * without a download from GitHub, so the rules that matter here are checked by hand). Each finding
 * names the line and the rule.
 */
export function lint(stages: Stage[], dockerignore: string): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  if (stages.length === 0) return ['no FROM'];
  for (const s of stages) {
    if (!/^[\w./-]+:[\w.-]+(@sha256:[0-9a-f]{64})?$/.test(s.from) && !names.has(s.from)) out.push(`FROM ${s.from}: pin a tag (DL3006)`);
    if (/:latest$/.test(s.from)) out.push(`FROM ${s.from}: do not use :latest (DL3007)`);
    for (const i of s.instructions) {
      const at = `line ${i.line} ${i.op}`;
      if (i.op === 'ADD') out.push(`${at}: use COPY, not ADD (DL3020)`);
      if (i.op === 'MAINTAINER') out.push(`${at}: deprecated (DL4000)`);
      if (i.op === 'WORKDIR' && !i.args[0]?.startsWith('/')) out.push(`${at}: use an absolute WORKDIR (DL3000)`);
      if (i.op === 'COPY' && i.flags.from && !names.has(i.flags.from)) out.push(`${at}: --from=${i.flags.from} names no earlier stage (DL3022)`);
      if (i.op === 'RUN') {
        if (/\bnpm (i|install)\b/.test(i.text)) out.push(`${at}: use npm ci, which installs the lockfile exactly`);
        if (/\bapt-get install\b/.test(i.text) && !/--no-install-recommends/.test(i.text)) out.push(`${at}: apt-get install without --no-install-recommends (DL3015)`);
        if (/\bapt-get install\b/.test(i.text) && !/rm -rf \/var\/lib\/apt\/lists/.test(i.text)) out.push(`${at}: delete the apt lists after installing (DL3009)`);
        if (/\b(curl|wget)\b[^|]*\|\s*(ba)?sh\b/.test(i.text)) out.push(`${at}: no piping a download into a shell`);
        if (/\bsudo\b/.test(i.text)) out.push(`${at}: no sudo (DL3004)`);
        if (/^\s*cd\s/.test(i.text)) out.push(`${at}: use WORKDIR, not cd (DL3003)`);
      }
      if (i.op === 'ENV' || i.op === 'ARG') for (const [k] of i.op === 'ENV' ? envPairs(i) : [[i.args[0]?.split('=')[0] ?? '']]) if (SECRETISH.test(k)) out.push(`${at}: ${k} looks like a secret: pass it at run time, never bake it into the image`);
    }
    if (s.name) names.add(s.name);
  }
  const last = stages.at(-1)!;
  const ops = (op: string) => last.instructions.filter((i) => i.op === op);
  const user = ops('USER').at(-1)?.args[0];
  if (!user || user === 'root' || user === '0') out.push('final stage: set a USER that is not root (DL3002)');
  const cmd = ops('CMD');
  if (cmd.length !== 1 || !cmd[0].exec) out.push('final stage: exactly one CMD, in exec (JSON) form, so signals reach node (DL3025)');
  const hc = ops('HEALTHCHECK');
  if (hc.length !== 1 || !hc[0].exec) out.push('final stage: exactly one HEALTHCHECK with an exec-form command');
  if (ops('STOPSIGNAL').length === 0) out.push('final stage: name the STOPSIGNAL the server drains on');
  const port = ops('ENV').flatMap(envPairs).find(([k]) => k === 'PORT')?.[1];
  if (port && !ops('EXPOSE').some((e) => e.args.includes(port))) out.push(`final stage: EXPOSE the PORT it sets (${port})`);
  const ignore = dockerignore.split('\n').map((l) => l.trim());
  for (const must of ['node_modules', '.git', 'env/*.env', 'data']) if (!ignore.includes(must)) out.push(`.dockerignore: must list ${must} (local installs, history, secrets and data never go into the build context)`);
  return out;
}

/** A .dockerignore pattern as a RegExp over context-relative paths (`*` within one segment, `**` across). */
function patternRe(p: string): RegExp {
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '*' && p[i + 1] === '*') (re += '.*'), i++;
    else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}(/.*)?$`);
}

/** Whether a context-relative path is left out of the build context by the .dockerignore text. */
export function ignoredBy(dockerignore: string): (path: string) => boolean {
  const rules = dockerignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => (l.startsWith('!') ? { keep: true, re: patternRe(l.slice(1).replace(/^\/+/, '')) } : { keep: false, re: patternRe(l.replace(/^\/+/, '')) }));
  return (path) => {
    let out = false;
    for (const r of rules) if (r.re.test(path)) out = !r.keep;
    return out;
  };
}

export const readText = (path: string) => readFileSync(path, 'utf8');
