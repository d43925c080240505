// docs/operations.md, "What to back up" (spec: Operations → What to back up): the list names the
// stack's `.env` and `env/*.env` files — every env file the compose file reads among them — and the
// compose file itself, which exists under the name the doc gives.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT } from '../helpers/db.ts';

const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
const section = doc.slice(doc.indexOf('## What to back up'), doc.indexOf('\n## ', doc.indexOf('## What to back up') + 1));
/** The first cell of each row of the section's table. */
const whats = [...section.matchAll(/^\| (.+?) \| .+ \|$/gm)].map((m) => m[1]).filter((w) => w !== 'What' && !/^-+$/.test(w));
const row = (re: RegExp) => whats.find((w) => re.test(w));

test('the backup list names `.env` and `env/*.env`, and every env file compose.yaml reads', () => {
  assert.ok(whats.length >= 5, `a table: ${JSON.stringify(whats)}`);
  const env = row(/`env\/\*\.env`/);
  assert.ok(env, 'a row names env/*.env');
  assert.match(env!, /`\.env`/, 'the same row names the stack .env');
  const compose = readFileSync(join(ROOT, 'compose.yaml'), 'utf8');
  const envFiles = [...new Set([...compose.matchAll(/^\s*env_file:\s*(\S+)\s*$/gm)].map((m) => m[1]))];
  assert.ok(envFiles.length > 0, 'compose.yaml reads env files');
  for (const f of envFiles) {
    assert.match(f, /^env\/[^/]+\.env$/, `${f} is one of env/*.env`);
    assert.ok(env!.includes(`\`${f}\``), `the row names ${f}`);
  }
});

test('the backup list names the compose file, and that file is there', () => {
  const compose = row(/`compose\.yaml`/);
  assert.ok(compose, 'a row names compose.yaml');
  assert.match(compose!, /compose file/);
  assert.ok(existsSync(join(ROOT, 'compose.yaml')));
  assert.ok(row(/proxy/), 'and the proxy configuration');
});

test.run();
