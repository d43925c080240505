// The skill catalog (docs/skill-runs.md, "Catalog"): `skills.catalog` in runner.json lists git
// repositories (searched for SKILL.md files) and JSON index files (a path or an https:// URL). Each
// repository is fetched, shallow, into a bare cache under the state dir (`skills-cache/`); a search
// reuses a fetch younger than 10 minutes, inspect and install always fetch. Only repositories the
// catalog names can be inspected or installed from. git runs through execFile/spawn with an argv,
// never a shell; `--` ends the options before every URL and path.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as z from 'zod';
import type { SkillSource } from '../protocol/commands.ts';
import { CommandError } from './errors.ts';
import { git } from './commands/git.ts';
import type { CatalogEntry, RunnerConfig } from './config.ts';
import { errorText } from './log.ts';
import { stateDir } from './paths.ts';
import type { Env } from './paths.ts';

export const SKILL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const SEARCH_FRESH_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 100_000;
export const MAX_FILES = 1000;
export const MAX_BYTES = 20 * 1024 * 1024;
const MAX_SKILL_MD = 64 * 1024;
const MAX_INDEX_BYTES = 5 * 1024 * 1024;

const indexSchema = z.object({
  skills: z
    .array(z.object({ name: z.string().regex(SKILL_NAME), description: z.string().max(2000).default(''), repo: z.string(), ref: z.string().optional(), path: z.string().default('') }))
    .max(10_000),
});

export interface CatalogSkill {
  name: string;
  description: string;
  source: SkillSource;
  catalog: string;
}

const label = (e: CatalogEntry) => ('git' in e ? e.git : e.index);

/** Front matter `name:` and `description:` of a SKILL.md (single-line, quoted or folded values). */
export function frontMatter(text: string): { name?: string; description?: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (!m) return {};
  const out: Record<string, string> = {};
  const lines = m[1].split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const kv = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(lines[i]);
    if (!kv) continue;
    let value = kv[2].trim();
    if (value === '|' || value === '>' || value === '>-' || value === '|-') {
      const more: string[] = [];
      while (i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])) more.push(lines[++i].trim());
      value = more.join(value.startsWith('|') ? '\n' : ' ');
    }
    out[kv[1]] = value.replace(/^(['"])(.*)\1$/, '$2');
  }
  return { name: out.name, description: out.description };
}

// ---- the bare cache ----

const cacheDir = (env: Env, repo: string, ref?: string) => join(stateDir(env), 'skills-cache', createHash('sha256').update(`${repo}#${ref ?? ''}`).digest('hex').slice(0, 24));

/** Fetch `ref` (default HEAD) of `repo` into its bare cache; answers the cache and the commit. */
export async function fetchRepo(env: Env, repo: string, ref: string | undefined, maxAgeMs = 0): Promise<{ dir: string; commit: string }> {
  const dir = cacheDir(env, repo, ref);
  const stamp = join(dir, 'svc-fetched');
  const fresh = existsSync(stamp) && Date.now() - statSync(stamp).mtimeMs < maxAgeMs;
  if (!existsSync(join(dir, 'HEAD'))) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const init = await git(dir, ['init', '-q', '--bare']);
    if (init.code !== 0) throw new CommandError('failed', `git init failed: ${init.stderr.trim().slice(0, 200)}`);
  }
  if (!fresh) {
    const r = await git(dir, ['fetch', '-q', '--depth', '1', '--no-tags', '--', repo, `+${ref ?? 'HEAD'}:refs/svc/fetched`], { timeoutMs: FETCH_TIMEOUT_MS });
    if (r.code !== 0) throw new CommandError('fetch_failed', `git fetch of ${repo}${ref ? ` (${ref})` : ''} failed: ${r.stderr.trim().split('\n').pop()?.slice(0, 300) ?? ''}`);
    if (existsSync(stamp)) utimesSync(stamp, new Date(), new Date());
    else writeFileSync(stamp, '');
  }
  const commit = await git(dir, ['rev-parse', '--verify', '-q', 'refs/svc/fetched^{commit}']);
  if (commit.code !== 0) throw new CommandError('fetch_failed', `${repo} has no commit to read`);
  return { dir, commit: commit.stdout.trim() };
}

export interface TreeFile {
  path: string;
  mode: string;
  size: number;
  blob: string;
}

/** The files under `path` at `commit`: regular files only (a link or a submodule refuses the skill). */
export async function listTree(dir: string, commit: string, path: string): Promise<{ tree: string; files: TreeFile[] }> {
  // `<commit>:<path>` names the object at that path (a path takes the rest of the text, so no ^{tree}).
  const tree = await git(dir, ['rev-parse', '--verify', '-q', path === '' || path === '.' ? `${commit}^{tree}` : `${commit}:${path}`]);
  const type = tree.code === 0 ? (await git(dir, ['cat-file', '-t', tree.stdout.trim()])).stdout.trim() : '';
  if (type !== 'tree') throw new CommandError('unknown_skill', `${path || '(root)'} is not a directory at ${commit.slice(0, 12)}`);
  const ls = await git(dir, ['ls-tree', '-r', '-l', '-z', '--', tree.stdout.trim()]);
  if (ls.code !== 0) throw new CommandError('failed', `git ls-tree failed: ${ls.stderr.trim().slice(0, 200)}`);
  const files: TreeFile[] = [];
  let bytes = 0;
  let unsafe: string | null = null;
  for (const entry of ls.stdout.split('\0').filter(Boolean)) {
    const m = /^(\d{6}) (\w+) ([0-9a-f]+)\s+(-|\d+)\t(.*)$/s.exec(entry);
    if (!m) continue;
    const [, mode, type, blob, size, p] = m;
    if (type !== 'blob' || (mode !== '100644' && mode !== '100755')) unsafe ??= `the skill holds ${type === 'commit' ? 'a submodule' : 'a symbolic link'} (${p}); only regular files can be installed`;
    else if (p.split('/').some((seg) => seg === '..' || seg === '.git' || seg === '')) unsafe ??= `the skill holds a path that cannot be installed: ${p}`;
    else {
      bytes += Number(size);
      files.push({ path: p, mode, size: Number(size), blob });
    }
  }
  if (!files.some((f) => f.path === 'SKILL.md')) throw new CommandError('unknown_skill', `${path || '(root)'} has no SKILL.md`);
  if (unsafe) throw new CommandError('unsafe_skill', unsafe);
  if (files.length > MAX_FILES) throw new CommandError('too_large', `the skill has ${files.length} files; at most ${MAX_FILES}`);
  if (bytes > MAX_BYTES) throw new CommandError('too_large', `the skill is ${bytes} bytes; at most ${MAX_BYTES}`);
  return { tree: tree.stdout.trim(), files: files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}

/** Blob contents, binary-safe, through one `git cat-file --batch`. */
export function readBlobs(dir: string, blobs: string[]): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['cat-file', '--batch'], { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, GIT_DIR: undefined } as NodeJS.ProcessEnv });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.once('error', (e) => reject(new CommandError('git_not_found', `git could not run (${(e as NodeJS.ErrnoException).code})`)));
    child.once('close', () => {
      const out = Buffer.concat(chunks);
      const map = new Map<string, Buffer>();
      let at = 0;
      for (const blob of blobs) {
        const nl = out.indexOf(10, at);
        const [sha, type, size] = out.subarray(at, nl).toString().split(' ');
        if (type !== 'blob' || sha !== blob) return reject(new CommandError('failed', `git cat-file could not read ${blob}`));
        map.set(blob, out.subarray(nl + 1, nl + 1 + Number(size)));
        at = nl + 1 + Number(size) + 1;
      }
      resolve(map);
    });
    child.stdin.end(blobs.join('\n') + '\n');
  });
}

/** A skill's content hash: SHA-256 over `path\nmode\nsize\n<bytes>` of each file in path order. */
export function contentHash(files: { path: string; mode: string; data: Buffer }[]): string {
  const h = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) h.update(`${f.path}\n${f.mode}\n${f.data.length}\n`).update(f.data);
  return h.digest('hex');
}

// ---- search ----

async function readIndex(entry: { index: string }): Promise<CatalogSkill[]> {
  let text: string;
  if (entry.index.startsWith('https://')) {
    const res = await fetch(entry.index, { signal: AbortSignal.timeout(10_000), redirect: 'error' });
    if (!res.ok) throw new Error(`answered ${res.status}`);
    text = await res.text();
  } else text = readFileSync(entry.index, 'utf8');
  if (Buffer.byteLength(text) > MAX_INDEX_BYTES) throw new Error(`larger than ${MAX_INDEX_BYTES} bytes`);
  const parsed = indexSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`not a skill index: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`);
  return parsed.data.skills.map((s) => ({ name: s.name, description: s.description, source: { repo: s.repo, ...(s.ref ? { ref: s.ref } : {}), path: s.path }, catalog: entry.index }));
}

async function readGitCatalog(env: Env, entry: { git: string; ref?: string }): Promise<CatalogSkill[]> {
  const { dir, commit } = await fetchRepo(env, entry.git, entry.ref, SEARCH_FRESH_MS);
  const ls = await git(dir, ['ls-tree', '-r', '-z', commit]);
  const entries = ls.stdout
    .split('\0')
    .map((l) => /^\d{6} blob ([0-9a-f]+)\t(.*)$/s.exec(l))
    .filter((m): m is RegExpExecArray => Boolean(m) && basename(m![2]) === 'SKILL.md' && m![2].split('/').length <= 6);
  const paths = entries.map((m) => m[2]);
  const blobs = entries.map((m) => m[1]);
  const texts = paths.length ? await readBlobs(dir, blobs) : new Map<string, Buffer>();
  const out: CatalogSkill[] = [];
  paths.forEach((p, i) => {
    const fm = frontMatter(texts.get(blobs[i])?.toString('utf8') ?? '');
    const path = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
    const name = fm.name ?? (path ? basename(path) : '');
    if (SKILL_NAME.test(name)) out.push({ name, description: (fm.description ?? '').slice(0, 2000), source: { repo: entry.git, ...(entry.ref ? { ref: entry.ref } : {}), path }, catalog: entry.git });
  });
  return out;
}

/** Every catalog's skills matching the query (name first, then description), at most `limit`. */
export async function searchCatalog(config: RunnerConfig, env: Env, query: string, limit = 50) {
  const errors: { catalog: string; message: string }[] = [];
  const all: CatalogSkill[] = [];
  await Promise.all(
    config.skills.catalog.map(async (entry) => {
      try {
        all.push(...('git' in entry ? await readGitCatalog(env, entry) : await readIndex(entry)));
      } catch (e) {
        errors.push({ catalog: label(entry), message: errorText(e).slice(0, 300) });
      }
    }),
  );
  const q = query.trim().toLowerCase();
  const rank = (s: CatalogSkill) => (!q ? 3 : s.name.toLowerCase() === q ? 0 : s.name.toLowerCase().includes(q) ? 1 : s.description.toLowerCase().includes(q) ? 2 : -1);
  const found = all.filter((s) => rank(s) >= 0).sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  return { skills: found.slice(0, limit), total: found.length, errors };
}

/** Inspect and install take sources only from repositories the catalog names. */
export async function checkInCatalog(config: RunnerConfig, source: SkillSource): Promise<void> {
  for (const entry of config.skills.catalog) {
    if ('git' in entry && entry.git === source.repo) return;
    if ('index' in entry) {
      const listed = await readIndex(entry).catch(() => []);
      if (listed.some((s) => s.source.repo === source.repo)) return;
    }
  }
  throw new CommandError('source_not_in_catalog', `${source.repo} is not a repository of this runner's skill catalog (skills.catalog in runner.json)`);
}

export interface Inspected {
  name: string;
  description: string;
  source: SkillSource;
  commit: string;
  tree: string;
  sha256: string;
  files: { path: string; mode: string; size: number }[];
  skillMd: string;
  skillMdTruncated: boolean;
  /** File contents by path. */
  contents: Map<string, Buffer>;
}

/** Fetch the source, read the skill's tree and files, hash them. */
export async function inspectSource(config: RunnerConfig, env: Env, source: SkillSource): Promise<Inspected> {
  await checkInCatalog(config, source);
  const { dir, commit } = await fetchRepo(env, source.repo, source.ref);
  const path = source.path === '.' ? '' : source.path;
  const { tree, files } = await listTree(dir, commit, path);
  const blobs = await readBlobs(dir, files.map((f) => f.blob));
  const contents = new Map(files.map((f) => [f.path, blobs.get(f.blob)!]));
  const text = contents.get('SKILL.md')!.toString('utf8');
  const fm = frontMatter(text);
  const name = fm.name ?? (path ? basename(path) : basename(source.repo).replace(/\.git$/, ''));
  if (!SKILL_NAME.test(name)) throw new CommandError('invalid_skill', 'the skill name must be 1-64 letters, digits, _ or -');
  return {
    name,
    description: (fm.description ?? '').slice(0, 2000),
    source: { ...source, path },
    commit,
    tree,
    sha256: contentHash(files.map((f) => ({ path: f.path, mode: f.mode, data: contents.get(f.path)! }))),
    files: files.map(({ path: p, mode, size }) => ({ path: p, mode, size })),
    skillMd: text.slice(0, MAX_SKILL_MD),
    skillMdTruncated: text.length > MAX_SKILL_MD,
    contents,
  };
}
