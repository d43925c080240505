// Generated Gemini CLI chat files with every counting trap (docs/cost.md "Gemini CLI"): two roots
// (GEMINI_DATA_DIR is a comma list), slug dirs with .project_root, a legacy SHA-256 dir found through
// projects.json, messages re-appended as tokens arrive (the last line per id wins), $set lines and a
// $set.messages checkpoint, a $rewindTo (the dropped message still counts), a message without a model
// (the last model carries), a corrupt line, a sub-agent file, a >200k prompt (long-context price), a
// legacy .json and the .jsonl copy its resume wrote (ccusage counts the copied messages twice; svc once).
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Tokens { input: number; output: number; cached: number; thoughts: number; tool: number }
export interface Fixture {
  home: string;
  roots: string[];
  /** Per `<day> <model>`: the thoughts counted (svc's outputTokens include them, ccusage's do not). */
  thoughts: Map<string, number>;
  /** Per `<day> <model>`: the tokens of the messages ccusage counts twice (the resume copy), ccusage's mapping. */
  copied: Map<string, { input: number; output: number; cacheRead: number; thoughts: number }>;
  /** cwd of each session id, as the chat dirs name it. */
  cwd: Map<string, string>;
}

const ccInput = (t: Tokens) => t.input - t.cached + t.tool;

export function writeGeminiFixtures(dir: string): Fixture {
  const home = join(dir, 'home');
  const rootA = join(home, '.gemini', 'tmp');
  const rootB = join(dir, 'other-gemini', 'tmp');
  const fx: Fixture = { home, roots: [rootA, rootB], thoughts: new Map(), copied: new Map(), cwd: new Map() };
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const tok = (t: Partial<Tokens>): Tokens & { total: number } => {
    const x = { input: 0, output: 0, cached: 0, thoughts: 0, tool: 0, ...t };
    return { ...x, total: x.input + x.output + x.thoughts + x.tool };
  };
  const write = (path: string, lines: unknown[]) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  };
  const meta = (sessionId: string, projectHash = 'a'.repeat(64)) => ({ sessionId, projectHash, startTime: '2026-05-01T00:00:00.000Z', lastUpdated: '2026-05-01T00:00:00.000Z', kind: 'main' });
  const msg = (id: string, at: string, model: string | undefined, t?: Tokens & { total: number }) => ({ id, timestamp: at, type: 'gemini', content: '', ...(model ? { model } : {}), thoughts: [], toolCalls: [], ...(t ? { tokens: t } : {}) });
  const counted = (at: string, model: string, t: Tokens) => add(fx.thoughts, `${at.slice(0, 10)} ${model}`, t.thoughts);

  // Project 1 (slug dir, .project_root): re-appended lines, $set, checkpoint, rewind, model carried, corrupt line.
  const p1 = join(rootA, 'my-app');
  mkdirSync(p1, { recursive: true });
  writeFileSync(join(p1, '.project_root'), '/work/my-app');
  const s1 = '5c0e9a52-8f1e-4d7b-9a61-2b4f0f3c7d11';
  fx.cwd.set(s1, '/work/my-app');
  const a1 = tok({ input: 15327, output: 23, cached: 11526, thoughts: 919, tool: 7 });
  const a1final = tok({ input: 15327, output: 410, cached: 11526, thoughts: 1200, tool: 7 });
  const a2 = tok({ input: 20000, output: 500, cached: 15000, thoughts: 0, tool: 0 });
  const a3 = tok({ input: 22000, output: 300, cached: 0, thoughts: 100, tool: 12 }); // later rewound: still counted
  const a4 = tok({ input: 30000, output: 800, cached: 20000, thoughts: 50, tool: 0 }); // no model: carries flash
  write(join(p1, 'chats', 'session-2026-05-17T11-07-5c0e9a52.jsonl'), [
    meta(s1),
    { id: 'u1', timestamp: '2026-05-17T11:07:05.120Z', type: 'user', content: [{ text: 'fix the failing test' }] },
    msg('g1', '2026-05-17T11:07:32.000Z', 'gemini-3-flash-preview'),
    msg('g1', '2026-05-17T11:07:32.000Z', 'gemini-3-flash-preview', a1),
    { $set: { lastUpdated: '2026-05-17T11:07:32.010Z' } },
    msg('g1', '2026-05-17T11:07:32.000Z', 'gemini-3-flash-preview', a1final),
    msg('g2', '2026-05-17T11:08:00.000Z', 'gemini-2.5-pro', a2),
    { $set: { lastUpdated: '2026-05-17T11:08:01.000Z', messages: [msg('g1', '2026-05-17T11:07:32.000Z', 'gemini-3-flash-preview', a1final), msg('g2', '2026-05-17T11:08:00.000Z', 'gemini-2.5-pro', a2)] } },
    msg('g3', '2026-05-17T11:09:00.000Z', 'gemini-2.5-flash', a3),
    { $rewindTo: 'g3' },
    '{"id":"broken", "timestamp": ',
    { id: 'i1', timestamp: '2026-05-17T11:09:30.000Z', type: 'info', content: 'rewound' },
    msg('g4', '2026-05-18T09:00:00.000Z', undefined, a4),
  ]);
  counted('2026-05-17T', 'gemini-3-flash-preview', a1final);
  counted('2026-05-17T', 'gemini-2.5-pro', a2);
  counted('2026-05-17T', 'gemini-2.5-flash', a3);
  counted('2026-05-18T', 'gemini-2.5-flash', a4);
  // Its sub-agent: chats/<parent>/<id>.jsonl.
  const sub = 'aa11bb22-0000-4000-8000-000000000001';
  fx.cwd.set(sub, '/work/my-app');
  const b1 = tok({ input: 9000, output: 120, cached: 4000, thoughts: 300, tool: 3 });
  write(join(p1, 'chats', s1, `${sub}.jsonl`), [{ ...meta(sub), kind: 'subagent' }, msg('sg1', '2026-05-17T12:00:00.000Z', 'gemini-2.5-flash', b1)]);
  counted('2026-05-17T', 'gemini-2.5-flash', b1);

  // Project 2 (legacy SHA-256 dir, found by projects.json), a >200k prompt on Pro.
  const p2path = '/work/big-repo';
  const hash = createHash('sha256').update(p2path).digest('hex');
  writeFileSync(join(home, '.gemini', 'projects.json'), JSON.stringify({ projects: { [p2path]: 'big-repo', '/work/my-app': 'my-app' } }));
  const s2 = '77777777-1111-4222-8333-444444444444';
  fx.cwd.set(s2, p2path);
  const c1 = tok({ input: 250000, output: 4000, cached: 40000, thoughts: 2000, tool: 0 });
  const c2 = tok({ input: 120000, output: 1000, cached: 100000, thoughts: 0, tool: 0 });
  write(join(rootA, hash, 'chats', 'session-2026-05-18T10-00-77777777.jsonl'), [meta(s2, hash), msg('c1', '2026-05-18T10:00:00.000Z', 'gemini-2.5-pro', c1), msg('c2', '2026-05-18T10:05:00.000Z', 'gemini-2.5-pro', c2)]);
  counted('2026-05-18T', 'gemini-2.5-pro', c1);
  counted('2026-05-18T', 'gemini-2.5-pro', c2);

  // Second root: a legacy .json and the .jsonl its resume wrote (the first two messages copied, one new).
  const p3 = join(rootB, 'service');
  mkdirSync(p3, { recursive: true });
  writeFileSync(join(p3, '.project_root'), '/work/service');
  const s3 = '33333333-aaaa-4bbb-8ccc-dddddddddddd';
  fx.cwd.set(s3, '/work/service');
  const d1 = tok({ input: 5000, output: 200, cached: 1000, thoughts: 40, tool: 0 });
  const d2 = tok({ input: 7000, output: 250, cached: 3000, thoughts: 0, tool: 5 });
  const d3 = tok({ input: 9000, output: 300, cached: 6000, thoughts: 10, tool: 0 });
  const m1 = msg('d1', '2026-06-02T08:00:00.000Z', 'gemini-2.5-flash-lite', d1), m2 = msg('d2', '2026-06-02T08:01:00.000Z', 'gemini-2.5-flash-lite', d2);
  mkdirSync(join(p3, 'chats'), { recursive: true });
  writeFileSync(join(p3, 'chats', 'session-2026-06-02T08-00-33333333.json'), JSON.stringify({ ...meta(s3), messages: [{ id: 'du', timestamp: '2026-06-02T07:59:00.000Z', type: 'user', content: 'go' }, m1, m2] }));
  write(join(p3, 'chats', 'session-2026-06-02T09-00-33333333.jsonl'), [meta(s3), m1, m2, msg('d3', '2026-06-02T09:00:00.000Z', 'gemini-2.5-flash-lite', d3)]);
  for (const t of [d1, d2, d3]) counted('2026-06-02T', 'gemini-2.5-flash-lite', t);
  fx.copied.set('2026-06-02 gemini-2.5-flash-lite', { input: ccInput(d1) + ccInput(d2), output: d1.output + d2.output, cacheRead: d1.cached + d2.cached, thoughts: d1.thoughts + d2.thoughts });
  return fx;
}
