// The runner bundle builds its module-level zod schemas when they are first used (scripts/lazy-schemas.mjs,
// protocol/lazy-schema.ts): the rewrite itself, the stand-in's behaviour, and the point of it — an idle
// daemon does not run zod's constructor often enough for V8 to optimise it, so the optimising compiler is not
// paged into every idle runner (docs/performance.md, "Schemas built when first used").
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as z from 'zod';
import { lazySchema } from '../../protocol/lazy-schema.ts';
import { lazySchemaSource } from '../../scripts/lazy-schemas.mjs';
import { startFakeServer } from './_fake-server.ts';
import { killDaemons, pairedConfig, sandbox, startDaemon } from './_harness.ts';

const HELPER = join(import.meta.dirname, '..', '..', 'protocol', 'lazy-schema.ts');
const ZOD = import.meta.resolve('zod');

/** The rewritten module, imported: its exports, and how many schemas were wrapped. */
async function load(source: string): Promise<{ wrapped: number; code: string; mod: Record<string, any> }> {
  const { code, wrapped } = lazySchemaSource(source, 'example.ts', HELPER);
  const dir = mkdtempSync(join(tmpdir(), 'svc-lazy-'));
  try {
    const file = join(dir, 'example.ts');
    writeFileSync(file, code.replaceAll(`from "zod"`, `from ${JSON.stringify(ZOD)}`));
    return { wrapped, code, mod: await import(pathToFileURL(file).href) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('module-level schema chains are wrapped; schemas inside functions, non-schema chains and side effects are not', async () => {
  const { wrapped, code, mod } = await load(`
    import * as z from 'zod';
    export const name = z.string().min(1).max(10);
    export const when = z.iso.datetime({ offset: true });
    export const entry = z.strictObject({ name, tags: z.array(z.string()).default([]) });
    export const kinds = z.enum(['a', 'b']).options;
    export const parsed = z.number().parse(3);
    export const make = (max: number) => z.string().max(max);
    export const table = { ping: { args: z.strictObject({}) } };
    export const described = z.string().describe('a name').optional();
    z.config({});
    export type Entry = z.infer<typeof entry>;
  `);
  assert.is(wrapped, 4, code);
  assert.match(code, /__lazySchema\(\(\) => \(z\.strictObject\(\{\}\)\)\)/);
  assert.match(code, /\(max\) => z\.string\(\)\.max\(max\);/, 'a schema made inside a function is left alone');
  assert.match(code, /z\.config\(\{\}\);/, 'a side effect is not deferred');
  assert.match(code, /= z\.string\(\)\.describe\("a name"\)\.optional\(\);/, 'nor a registration in zod\'s registry');
  assert.is(z.globalRegistry.get(mod.described.unwrap())?.description, 'a name');
  assert.equal(mod.kinds, ['a', 'b'], 'a chain that ends in a property is not a schema');
  assert.is(mod.parsed, 3);
  assert.equal(mod.entry.parse({ name: 'x' }), { name: 'x', tags: [] });
  assert.is(mod.entry.safeParse({ name: '' }).success, false);
  assert.is(mod.when.safeParse('2026-11-29T12:00:00Z').success, true);
  assert.is(mod.table.ping.args.safeParse({ x: 1 }).success, false, 'a schema in an object literal is wrapped and works');
});

test('a module without a zod namespace import comes back as it was compiled', () => {
  const { wrapped, code } = lazySchemaSource(`import { z } from 'zod';\nexport const a = z.string();\n`, 'a.ts', HELPER);
  assert.is(wrapped, 0);
  assert.not.match(code, /__lazySchema/);
});

test('lazySchema: built once, at the first read, and then the schema itself for zod and for callers', () => {
  let builds = 0;
  const inner = lazySchema(() => (builds++, z.strictObject({ n: z.number().int() })));
  const outer = lazySchema(() => z.array(inner).max(2));
  assert.is(builds, 0, 'nothing built before a read');
  assert.equal(outer.parse([{ n: 1 }]), [{ n: 1 }], 'a lazy schema composed into another parses');
  assert.is(builds, 1);
  const bad = outer.safeParse([{ n: 1.5 }]);
  assert.is(bad.success, false);
  assert.equal(bad.error!.issues[0].path, [0, 'n'], 'issue paths through the composed schema');
  assert.ok(inner instanceof z.ZodObject, 'instanceof a zod class');
  assert.ok('_zod' in inner);
  assert.equal(Object.keys(inner.shape), ['n']);
  assert.is(inner.optional().parse(undefined), undefined, 'methods return schemas built from it');
  assert.is(builds, 1, 'built once');
});

test('an idle daemon, connected and answering a command, has had no function optimised by V8', async () => {
  // `--trace-opt` prints each function V8 optimises. Before, zod's constructor ran ~6,500 times while the
  // modules' schemas were built at start, and was optimised in every daemon.
  const fake = await startFakeServer();
  const sb = sandbox();
  try {
    sb.writeConfig(pairedConfig(fake.url, { profiles: [] }));
    const d = startDaemon(sb, {}, ['--trace-opt']);
    const conn = await fake.waitConns(1);
    await d.waitFor(/connected to /);
    const ping = await conn.command('runner.ping');
    assert.is(ping.ok, true, JSON.stringify(ping));
    const optimised = d.output().split('\n').filter((l) => l.includes('completed optimizing'));
    assert.equal(optimised, [], 'functions optimised while idle');
  } finally {
    await killDaemons();
    await fake.stop();
    sb.cleanup();
  }
});

test.run();
