// The runtime list (runner/runtimes/index.ts, docs/runner.md "Runtimes: one folder each"): one definition per
// name the wire knows (protocol/runtimes.ts), each under its own name, its default models priced in the seed
// (protocol/prices.ts), its label the pages' label, and a slot's argv without options the same as before
// runtimes were folders (binary, profile args, telemetry args, prompt) for Claude Code and Codex.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_PRICES, findPrice } from '../../protocol/prices.ts';
import { RUNTIME_LABELS, RUNTIMES as NAMES } from '../../protocol/runtimes.ts';
import { RUNTIME_LIST, RUNTIMES } from '../../runner/runtimes/index.ts';

test('one definition per wire name, under its own name, with the pages\' label', () => {
  assert.equal(Object.keys(RUNTIMES).sort(), [...NAMES].sort());
  for (const def of RUNTIME_LIST) {
    assert.is(RUNTIMES[def.name], def);
    assert.is(def.label, RUNTIME_LABELS[def.name]);
    assert.ok(def.binary && def.provider && def.home.envVar && def.home.defaultDir, def.name);
  }
});

test('every default model has a price in the seed', () => {
  for (const def of RUNTIME_LIST) for (const m of def.defaultModels) assert.ok(findPrice(m, DEFAULT_PRICES), `${def.name}: ${m} has no price`);
});

test('interactive argv without options is the prompt alone for Claude Code and Codex (unchanged); options map to each CLI', () => {
  assert.equal(RUNTIMES.claude.interactiveArgs({}, 'go'), ['go']);
  assert.equal(RUNTIMES.codex.interactiveArgs({}, 'go'), ['go']);
  assert.equal(RUNTIMES.claude.interactiveArgs({ model: 'opus', resume: 'abc', permissionMode: 'accept_edits' }, 'go'), ['--model', 'opus', '--resume', 'abc', '--permission-mode', 'acceptEdits', 'go']);
  assert.equal(RUNTIMES.codex.interactiveArgs({ model: 'gpt-5', resume: true, permissionMode: 'accept_edits' }, 'go'), ['resume', '--last', '--model', 'gpt-5', '--sandbox', 'workspace-write', 'go']);
});

test('headless argv: Claude Code and Codex as before; Gemini -p last with its approval mode', () => {
  assert.equal(RUNTIMES.claude.headlessArgs({ output: 'pull_request', profileArgs: [], model: 'm' }, 'P'), ['-p', '--output-format', 'stream-json', '--verbose', '--model', 'm', '--permission-mode', 'acceptEdits', 'P']);
  assert.equal(RUNTIMES.codex.headlessArgs({ output: 'report', profileArgs: [] }, 'P'), ['exec', '--json', 'P']);
  assert.equal(RUNTIMES.gemini.headlessArgs({ output: 'report', profileArgs: [] }, 'P'), ['--output-format', 'stream-json', '--approval-mode', 'default', '-p', 'P']);
  assert.equal(RUNTIMES.opencode.headlessArgs({ output: 'pull_request', profileArgs: [], model: 'claude-sonnet-4-5' }, 'P'), ['run', '--format', 'json', '-m', 'anthropic/claude-sonnet-4-5', 'P']);
  assert.equal(RUNTIMES.opencode.headlessArgs({ output: 'report', profileArgs: [], model: 'zai/glm-4.6' }, 'P'), ['run', '--format', 'json', '-m', 'zai/glm-4.6', 'P']);
});

test("skills dirs: Claude's and Codex's as before, Gemini's below GEMINI_CLI_HOME/.gemini", async () => {
  const { skillsDir } = await import('../../runner/skills.ts');
  assert.is(skillsDir('claude', { HOME: '/h', CLAUDE_CONFIG_DIR: '/c' }), '/c/skills');
  assert.is(skillsDir('codex', { HOME: '/h' }), '/h/.codex/skills');
  assert.is(skillsDir('gemini', { HOME: '/h' }), '/h/.gemini/skills');
  assert.is(skillsDir('gemini', { HOME: '/h', GEMINI_CLI_HOME: '/g' }), '/g/.gemini/skills');
  assert.is(skillsDir('opencode', { HOME: '/h' }), '/h/.opencode/skills');
  assert.is(skillsDir('opencode', { HOME: '/h', OPENCODE_CONFIG_DIR: '/o' }), '/o/skills');
});

test.run();
