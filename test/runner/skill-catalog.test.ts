// The skill catalog (docs/skill-runs.md, "Catalog"): skill.search over a local git repository and a JSON
// index, skill.inspect (fetch, tree hash, SKILL.md, file list), skill.install into a runtime's or a
// profile's skills dir with source and hash recorded, skill.list, skill.uninstall — real git, the real
// runner bundle against the fake server.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from './_harness.ts';
import { PROFILES, skillFleet } from './_skills.ts';
import type { SkillFleet } from './_skills.ts';

let f: SkillFleet;
let catalog: string;
let index: string;
let outside: string;

function repo(dir: string, files: Record<string, string>, links: Record<string, string> = {}): void {
  mkdirSync(dir, { recursive: true });
  f.git(dir, 'init', '-q', '-b', 'main');
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    writeFileSync(join(dir, p), text);
    if (p.endsWith('.sh')) chmodSync(join(dir, p), 0o755);
  }
  for (const [p, target] of Object.entries(links)) {
    mkdirSync(join(dir, p, '..'), { recursive: true });
    symlinkSync(target, join(dir, p));
  }
  f.git(dir, 'add', '-A');
  f.git(dir, 'commit', '-q', '-m', 'skills');
}

test.before.each(async () => {
  f = await skillFleet('catalog');
  catalog = join(f.sb.dir, 'catalog');
  repo(catalog, {
    'skills/pdf/SKILL.md': '---\nname: pdf\ndescription: Read and fill PDF forms.\n---\n# PDF\n',
    'skills/review/SKILL.md': '---\nname: review\ndescription: >\n  Review a pull request\n  and write findings.\n---\n# Review\nRun scripts/run.sh.\n',
    'skills/review/scripts/run.sh': '#!/bin/sh\necho review\n',
    'skills/review/reference/notes.md': 'notes\n',
    'skills/linked/SKILL.md': '---\nname: linked\ndescription: Holds a link.\n---\n',
    'README.md': 'catalog\n',
  }, { 'skills/linked/secret': '/etc/passwd' });
  f.git(catalog, 'tag', 'v1');
  index = join(f.sb.dir, 'index.json');
  writeFileSync(index, JSON.stringify({ skills: [{ name: 'pdf-index', description: 'PDF from the index', repo: catalog, ref: 'v1', path: 'skills/pdf' }] }));
  outside = join(f.sb.dir, 'outside');
  repo(outside, { 'SKILL.md': '---\nname: outside\ndescription: Not in the catalog.\n---\n' });
});
test.after.each(async () => {
  await f.cleanup();
});

const start = (extra: Record<string, unknown> = {}) =>
  f.start({ profiles: [...PROFILES(f.agentDir), { id: 'team', runtime: 'claude', env: { FAKE_AGENT_DIR: f.agentDir, CLAUDE_CONFIG_DIR: join(f.sb.dir, 'team-claude') }, args: [] }], skills: { catalog: [{ git: catalog }, { index }, { git: join(f.sb.dir, 'missing') }] }, ...extra });

test('skill.search: git repositories and index files, name matches first, a catalog that fails is named beside the results', async () => {
  const conn = await start();
  const all = (await conn.command('skill.search', { query: '' })).data;
  assert.equal(all.skills.map((s: any) => s.name).sort(), ['linked', 'pdf', 'pdf-index', 'review']);
  assert.equal(all.errors.map((e: any) => e.catalog), [join(f.sb.dir, 'missing')]);
  const pdf = (await conn.command('skill.search', { query: 'PDF' })).data;
  assert.equal(pdf.skills.map((s: any) => s.name), ['pdf', 'pdf-index']);
  assert.equal(pdf.skills[0].source, { repo: catalog, path: 'skills/pdf' });
  assert.equal(pdf.skills[1].source, { repo: catalog, ref: 'v1', path: 'skills/pdf' });
  const byDescription = (await conn.command('skill.search', { query: 'findings' })).data;
  assert.equal(byDescription.skills.map((s: any) => [s.name, s.description]), [['review', 'Review a pull request and write findings.']]);
});

test('skill.inspect: SKILL.md, the file list with modes, the commit, the git tree hash and a content hash; refusals for sources outside the catalog, links, missing paths and hostile URLs', async () => {
  const conn = await start();
  const r = await conn.command('skill.inspect', { source: { repo: catalog, path: 'skills/review' } });
  assert.is(r.ok, true, JSON.stringify(r));
  const d = r.data;
  assert.equal([d.name, d.description, d.commit, d.tree], ['review', 'Review a pull request and write findings.', f.git(catalog, 'rev-parse', 'HEAD').trim(), f.git(catalog, 'rev-parse', 'HEAD:skills/review').trim()]);
  assert.equal(d.files, [
    { path: 'SKILL.md', mode: '100644', size: 111 },
    { path: 'reference/notes.md', mode: '100644', size: 6 },
    { path: 'scripts/run.sh', mode: '100755', size: 22 },
  ]);
  assert.match(d.skillMd, /^---\nname: review/);
  assert.match(d.sha256, /^[0-9a-f]{64}$/);
  assert.is((await conn.command('skill.inspect', { source: { repo: catalog, path: 'skills/review' } })).data.sha256, d.sha256, 'the same tree hashes the same');
  const pinned = await conn.command('skill.inspect', { source: { repo: catalog, ref: 'v1', path: 'skills/pdf' } });
  assert.is(pinned.data.commit, f.git(catalog, 'rev-parse', 'v1^{commit}').trim());

  const refusals: [unknown, string][] = [
    [{ repo: outside, path: '' }, 'source_not_in_catalog'],
    [{ repo: catalog, path: 'skills/linked' }, 'unsafe_skill'],
    [{ repo: catalog, path: 'skills/nope' }, 'unknown_skill'],
    [{ repo: catalog, path: 'skills' }, 'unknown_skill'],
    [{ repo: catalog, path: '../outside' }, 'invalid_args'],
    [{ repo: catalog, path: '/etc' }, 'invalid_args'],
    [{ repo: '--upload-pack=touch PWNED', path: '' }, 'invalid_args'],
    [{ repo: 'ext::sh -c touch% PWNED', path: '' }, 'invalid_args'],
    [{ repo: catalog, ref: '--output=PWNED', path: '' }, 'invalid_args'],
    [{ repo: catalog, ref: 'nope', path: 'skills/pdf' }, 'fetch_failed'],
  ];
  for (const [source, code] of refusals) {
    const bad = await conn.command('skill.inspect', { source });
    assert.equal([bad.ok, bad.error?.code], [false, code], JSON.stringify(source));
  }
  assert.not.ok(existsSync(join(f.sb.dir, 'PWNED')) || existsSync(join(f.root, 'PWNED')));
});

test('skill.install into ~/.claude/skills with modes, source and hash recorded; skill.list shows it and notices a change; a reinstall replaces it; the installed skill can run', async () => {
  const conn = await start();
  const r = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/review' } });
  assert.is(r.ok, true, JSON.stringify(r));
  const dir = join(f.sb.home, '.claude', 'skills', 'review');
  assert.equal([r.data.name, r.data.runtime, r.data.dir, r.data.files, r.data.replaced], ['review', 'claude', dir, 3, false]);
  assert.equal(r.data.source, { repo: catalog, path: 'skills/review' });
  assert.is(r.data.tree, f.git(catalog, 'rev-parse', 'HEAD:skills/review').trim());
  assert.is(readFileSync(join(dir, 'scripts', 'run.sh'), 'utf8'), '#!/bin/sh\necho review\n');
  assert.ok(statSync(join(dir, 'scripts', 'run.sh')).mode & 0o100, 'the executable bit is kept');
  const record = JSON.parse(readFileSync(join(f.sb.env.XDG_STATE_HOME, 'svc', 'skills.json'), 'utf8')).installed;
  assert.equal(record.map((x: any) => [x.name, x.sha256, x.commit]), [['review', r.data.sha256, r.data.commit]]);

  let listed = (await conn.command('skill.list', {})).data.skills;
  const mine = listed.find((s: any) => s.dir === dir);
  assert.equal([mine.managed, mine.modified, mine.sha256, mine.description], [true, false, r.data.sha256, 'Review a pull request and write findings.']);
  assert.equal(listed.find((s: any) => s.name === 'echo' && s.runtime === 'claude').managed, false);
  writeFileSync(join(dir, 'reference', 'notes.md'), 'changed by hand\n');
  listed = (await conn.command('skill.list', {})).data.skills;
  assert.is(listed.find((s: any) => s.dir === dir).modified, true);
  const again = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/review' } });
  assert.is(again.data.replaced, true);
  assert.is(readFileSync(join(dir, 'reference', 'notes.md'), 'utf8'), 'notes\n');

  const run = await conn.command('skill.run', { projectId: 'p1', skill: 'review' });
  assert.is(run.ok, true, JSON.stringify(run));
  await f.waitState(run.data.runId, 'succeeded');
});

test("skill.install into a profile's config dir or the codex skills dir; skill.uninstall removes managed skills and refuses hand-made ones unless forced", async () => {
  const conn = await start();
  const team = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, profileId: 'team' });
  assert.is(team.data.dir, join(f.sb.dir, 'team-claude', 'skills', 'pdf'));
  assert.is(team.data.profileId, 'team');
  const codex = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, runtime: 'codex' });
  assert.is(codex.data.dir, join(f.sb.home, '.codex', 'skills', 'pdf'));
  // Gemini CLI and OpenCode read skills from their own homes (runner/runtimes/<name> `home`).
  const gemini = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, runtime: 'gemini' });
  assert.equal([gemini.ok, gemini.data?.dir, gemini.data?.runtime], [true, join(f.sb.home, '.gemini', 'skills', 'pdf'), 'gemini']);
  const opencode = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, runtime: 'opencode' });
  assert.equal([opencode.ok, opencode.data?.dir], [true, join(f.sb.home, '.opencode', 'skills', 'pdf')]);
  assert.ok(existsSync(join(opencode.data.dir, 'SKILL.md')));
  const openGone = await conn.command('skill.uninstall', { name: 'pdf', runtime: 'opencode' });
  assert.equal([openGone.data.removed, openGone.data.managed], [true, true]);
  assert.not.ok(existsSync(opencode.data.dir));
  assert.ok(existsSync(gemini.data.dir), 'only the OpenCode copy removed');
  const unknownRuntime = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, runtime: 'cursor' });
  assert.equal([unknownRuntime.ok, unknownRuntime.error.code], [false, 'invalid_args']);
  const listed = (await conn.command('skill.list', {})).data.skills;
  assert.equal(listed.find((s: any) => s.dir === team.data.dir).profiles, ['team']);
  const wrong = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, profileId: 'team', runtime: 'codex' });
  assert.equal([wrong.ok, wrong.error.code], [false, 'invalid_args']);
  const noProfile = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' }, profileId: 'nope' });
  assert.equal([noProfile.ok, noProfile.error.code], [false, 'unknown_profile']);

  const gone = await conn.command('skill.uninstall', { name: 'pdf', profileId: 'team' });
  assert.equal([gone.data.removed, gone.data.managed], [true, true]);
  assert.not.ok(existsSync(team.data.dir));
  assert.ok(existsSync(codex.data.dir), 'only that one');
  const handMade = await conn.command('skill.uninstall', { name: 'echo' });
  assert.equal([handMade.ok, handMade.error.code], [false, 'not_managed']);
  assert.ok(existsSync(join(f.sb.home, '.claude', 'skills', 'echo', 'SKILL.md')));
  const forced = await conn.command('skill.uninstall', { name: 'echo', force: true });
  assert.equal([forced.data.removed, forced.data.managed], [true, false]);
  const unknown = await conn.command('skill.uninstall', { name: 'nope' });
  assert.equal([unknown.ok, unknown.error.code], [false, 'unknown_skill']);
  const hostile = await conn.command('skill.uninstall', { name: '../../.ssh' });
  assert.equal([hostile.ok, hostile.error.code], [false, 'invalid_args']);
});

test('no catalog configured: search says so; inspect and install refuse every source', async () => {
  const conn = await f.start({ profiles: PROFILES(f.agentDir) });
  const s = await conn.command('skill.search', { query: 'pdf' });
  assert.equal([s.data.skills, s.data.note], [[], 'no catalog is configured (skills.catalog in runner.json)']);
  const i = await conn.command('skill.install', { source: { repo: catalog, path: 'skills/pdf' } });
  assert.equal([i.ok, i.error.code], [false, 'source_not_in_catalog']);
  assert.not.ok(existsSync(join(f.sb.home, '.claude', 'skills', 'pdf')));
});

test('an invalid catalog entry in runner.json is refused at start, naming the entry and never its value', async () => {
  f.sb.writeConfig({ server: 'http://127.0.0.1:9', runnerId: 'r1', token: 'svc_rt_test_token_0123456789abcdef', skills: { catalog: [{ git: '--upload-pack=x' }, { index: 'relative.json' }, { svn: 'x' }] } });
  const r = await runCli(f.sb, ['run']);
  assert.is(r.status, 1);
  assert.match(r.stderr, /skills\.catalog\.0/);
  assert.match(r.stderr, /skills\.catalog\.1/);
  assert.match(r.stderr, /skills\.catalog\.2/);
  assert.not.match(r.stderr, /upload-pack|relative\.json/);
});

test.run();
