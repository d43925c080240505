// Every setting the server reads is documented: the README's table and env/api.env.example.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CONFIG_KEYS, loadConfig } from '../../functions/lib/config.ts';
import { ROOT } from '../helpers/db.ts';

test('the README configuration table lists exactly the variables the server reads, with their defaults', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |'));
  const rows = [...table.matchAll(/^\| `([A-Z_]+)` \| ([^|]*) \|/gm)].map((m) => [m[1], m[2].replace(/`/g, '').trim()]);
  assert.equal(rows.map((r) => r[0]).sort(), [...CONFIG_KEYS].sort());
  const defaults = loadConfig({}) as Record<string, unknown>;
  for (const [name, documented] of rows) {
    const actual = defaults[name];
    if (actual === undefined || typeof actual === 'object' || ['DATABASE_DRIVER', 'MIGRATIONS_DIR', 'WEB_DIR'].includes(name)) continue;
    assert.is(documented, String(actual), `${name}: README says ${documented}, code says ${actual}`);
  }
});

test('env/api.env.example has a line for every variable', () => {
  const example = readFileSync(join(ROOT, 'env', 'api.env.example'), 'utf8');
  const names = [...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]);
  assert.equal(names.sort(), [...CONFIG_KEYS].sort());
});

test.run();
