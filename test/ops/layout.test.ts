// The layout shows the architecture (docs/architecture.md, issue #35's targets): no import cycle among the
// hand-written modules (type-only imports included), the admin pages import nothing from functions/, and
// no hand-written file passes 400 lines (the few that still do are named, with what splits them).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

const DIRS = ['functions', 'runner', 'protocol', 'web-static'];
const GENERATED = /(^|\/)gen\//;
/** Files over 400 lines that are known, with the step that splits them. */
const LONG: Record<string, string> = {};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.ts$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}
const files = DIRS.flatMap((d) => sources(join(ROOT, d))).filter((f) => !GENERATED.test(relative(ROOT, f)));
const IMPORT = /^\s*(?:import|export)\b[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|^\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/gm;
const imports = new Map(files.map((f) => [f, [...readFileSync(f, 'utf8').matchAll(IMPORT)].map((m) => resolve(dirname(f), m[1] ?? m[2]))]));

test('no import cycle among functions/, runner/, protocol/ and web-static/ (type imports included)', () => {
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]) => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(ROOT, p)).join(' → '));
      return;
    }
    state.set(f, 'open');
    for (const to of imports.get(f) ?? []) if (imports.has(to)) visit(to, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of files) visit(f, []);
  assert.equal(cycles, []);
});

test('the admin pages import nothing from functions/ (what both need lives in protocol/)', () => {
  const crossing = files
    .filter((f) => relative(ROOT, f).startsWith('web-static/'))
    .flatMap((f) => imports.get(f)!.filter((to) => relative(ROOT, to).startsWith('functions/')).map((to) => `${relative(ROOT, f)} → ${relative(ROOT, to)}`));
  assert.equal(crossing, []);
});

test('no hand-written file over 400 lines but the named ones', () => {
  const long = files.map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([f, n]) => n > 400 && !(f in LONG));
  assert.equal(long, []);
});

/** A route reads validate → call → present: its statements live in the area's queries module (issue #35 step 4). */
const MAX_ROUTE_STATEMENTS = 5;
test(`no routes.ts holds more than ${MAX_ROUTE_STATEMENTS} SQL statements (sql\`…\` templates, fragments included)`, () => {
  const heavy = files
    .filter((f) => f.endsWith('/routes.ts'))
    .map((f) => [relative(ROOT, f), (readFileSync(f, 'utf8').match(/\bsql`/g) ?? []).length] as const)
    .filter(([, n]) => n > MAX_ROUTE_STATEMENTS);
  assert.equal(heavy, []);
});

test.run();
