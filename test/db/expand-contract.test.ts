// The migration rule of rolling upgrades (docs/operations.md "Cutting a release"): a migration must keep
// the previous release working — expand now, contract one release later. The upgrade test runs the
// previous release against this build's migrations (test/ops/upgrade.test.ts); this one reads the
// migrations added since that release and refuses the statements that break the code of the release
// before them, unless the line says why it is safe with `-- contract:` (a column or table that release
// already stopped using).
// needs: git
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

const BREAKING: [RegExp, string][] = [
  [/\bdrop\s+(table|column|view|function|type|index)\b/i, 'drops what the previous release may use'],
  [/\brename\s+(column|to)\b/i, 'renames what the previous release uses by name'],
  [/\balter\s+column\s+\S+\s+(set\s+data\s+)?type\b/i, 'changes a column type under the previous release'],
  [/\balter\s+column\s+\S+\s+set\s+not\s+null\b/i, 'makes a column required that the previous release may leave empty'],
  [/\badd\s+column\s+(if\s+not\s+exists\s+)?\S+\s+[^,;]*\bnot\s+null\b(?![^,;]*\bdefault\b)/i, 'adds a required column without a default (the previous release inserts without it)'],
];

/** Statements of a migration that would break the previous release, as `line: reason`. */
export function breaking(text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const code = line.replace(/--.*$/, '');
    if (/--\s*contract:/.test(line)) return;
    for (const [re, why] of BREAKING) if (re.test(code)) out.push(`line ${i + 1}: ${why}: ${line.trim()}`);
  });
  return out;
}

const release = readFileSync(join(ROOT, 'RELEASES'), 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('#')).at(-1)!.trim().split(/\s+/)[1];

test('the rule finds the statements it is for, and lets a marked contract through', () => {
  assert.equal(breaking('alter table a add column b text;\ncreate index x on a (b);').length, 0);
  assert.equal(breaking('alter table a add column b text not null default \'\';').length, 0);
  for (const bad of ['alter table a drop column b;', 'drop table a;', 'alter table a rename column b to c;', 'alter table a alter column b type int;', 'alter table a alter column b set not null;', 'alter table a add column b text not null;']) {
    assert.is(breaking(bad).length, 1, bad);
  }
  assert.equal(breaking('alter table a drop column b; -- contract: unused since 0.1.0'), []);
});

test('migrations added since the previous release keep it working (expand, then contract one release later)', () => {
  const r = spawnSync('git', ['ls-tree', '--name-only', `${release}:sql`], { cwd: ROOT, encoding: 'utf8' });
  assert.is(r.status, 0, `the previous release ${release} is in this clone's history: ${r.stderr}`);
  const before = new Set(r.stdout.split('\n').filter(Boolean));
  const added = readdirSync(join(ROOT, 'sql')).filter((f) => /^\d{4}_.*\.sql$/.test(f) && !before.has(f));
  const found = added.flatMap((f) => breaking(readFileSync(join(ROOT, 'sql', f), 'utf8')).map((b) => `${f} ${b}`));
  assert.equal(found, []);
});

test.run();
