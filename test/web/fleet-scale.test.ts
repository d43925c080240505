// A figure for docs/performance.md ("Admin pages: Fleet page at scale"), measured in a real browser
// and REPORTED, not asserted: the time until the Fleet page is usable — the orchestrator's live state
// shown, all 8 slots with what their events recorded (issue, checkpoint, PR, checks) and their buttons —
// on an instance of 50 projects × 8 slots, against a baseline instance of 2 projects × 1 slot measured
// in the same run with the same browser. Three cases each: a cold load (empty browser cache), a warm
// reload (the hashed files come from the cache), and a switch to another project's fleet within the
// app. What it asserts is only that the page shows what it should (the right project, all its slots).
// The runner is a protocol client that answers orchestrator.status at once: the figure is the
// server's and the page's, not a real runner's.
//   node scripts/test.mjs --db postgres test/web/fleet-scale.test.ts   (the figure is printed as `fleet-usable`)
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { signIn } from '../helpers/live.ts';
import { startServer } from '../helpers/server.ts';
import type { RunningServer } from '../helpers/server.ts';
import { send } from '../helpers/usage-events.ts';
import type { Ev } from '../helpers/usage-events.ts';
import { callAs } from '../helpers/users.ts';
import { connect, pairRunner } from '../helpers/wsclient.ts';
import type { Client } from '../helpers/wsclient.ts';

const ROUNDS = Number(process.env.FLEET_SCALE_ROUNDS ?? 5);

interface Instance {
  server: RunningServer;
  runner: Client;
  projects: { id: string; name: string }[];
  slots: number;
}

let browser: Browser;
const instances: Record<'scale' | 'base', Instance> = {} as never;

/** What the runner would record for one slot of a project: dispatched, a PR, a checkpoint, its checks. */
function slotEvents(projectId: string, slot: number, issue: number): Ev[] {
  const ts = (n: number) => new Date(Date.now() - 60_000 + slot * 1000 + n * 100).toISOString();
  const ev = (kind: string, n: number, data: Record<string, unknown>): Ev => ({
    id: `scale.${projectId}.${slot}.${kind}.${randomBytes(3).toString('hex')}`,
    source: `project:${projectId}`,
    kind,
    ts: ts(n),
    payload: { project: projectId, type: kind, slot: String(slot), issue, data, origin: 'runner' },
  });
  return [
    ev('slot.dispatched', 0, { title: `Issue ${issue}`, branch: `svc/${issue}` }),
    ev('pr.opened', 1, { pr: { number: issue + 5000, url: `https://github.example/acme/x/pull/${issue + 5000}` }, title: `Fix ${issue}` }),
    ev('slot.checkpoint', 2, { checkpoint: 'pr_open', summary: 'waiting for review' }),
    ev('pr.checks_changed', 3, { pr: { number: issue + 5000 }, state: 'passed', summary: '3 of 3 passed' }),
  ];
}

/** An instance with `projects` projects on one runner, each with `slots` slots recorded; the runner answers orchestrator.status. */
async function instance(projects: number, slots: number): Promise<Instance> {
  const server = await startServer({ admin: true });
  const paired = await pairRunner(server.api, server.url, 'scale-box');
  const made: { id: string; name: string }[] = [];
  for (let i = 0; i < projects; i++) {
    const name = `P${String(i).padStart(2, '0')}`;
    const p = await callAs(server, '/api/projects', { method: 'POST', json: { name, repo: `acme/p${i}`, runnerId: paired.runnerId, rootPath: `/srv/scale/p${i}` } });
    assert.is(p.status, 201, JSON.stringify(p.body));
    made.push({ id: p.body.id, name });
  }
  const runner = connect(server.url, paired.token);
  await runner.next('welcome');
  runner.ws.on('message', (d) => {
    const f = JSON.parse(d.toString());
    if (f.type !== 'command' || f.name !== 'orchestrator.status') return;
    const live = Array.from({ length: slots }, (_, s) => ({ slot: String(s + 1), session: `svc-${f.args.projectId}-w${s + 1}`, state: 'working', lastOutputAt: new Date().toISOString() }));
    runner.send({ type: 'result', requestId: f.requestId, ok: true, data: { present: true, state: 'working', session: `svc-${f.args.projectId}-orch`, slots: live } });
  });
  const events = made.flatMap((p, i) => Array.from({ length: slots }, (_, s) => slotEvents(p.id, s + 1, i * 100 + s + 1)).flat());
  for (let i = 0; i < events.length; i += 400) await send(runner, events.slice(i, i + 400));
  const last = made[made.length - 1];
  const fleet = await callAs(server, `/api/projects/${last.id}/fleet`);
  assert.is(fleet.body.slots.length, slots);
  return { server, runner, projects: made, slots };
}

test.before(async () => {
  browser = await launchBrowser();
  instances.scale = await instance(50, 8);
  instances.base = await instance(2, 1);
});
test.after(async () => {
  for (const i of Object.values(instances)) {
    i.runner?.ws.close();
    await i.server?.cleanup();
  }
  await browser?.close();
});

/**
 * Records, in the page, performance.now() when the Fleet page of `window.__expect` (project name, slot
 * count, slot 1's issue) is usable: the orchestrator working, every slot with its issue, PR checks and
 * buttons. On a load performance.now() counts from the navigation's start.
 */
// A string, not a function: tsx would wrap the inner functions in a helper (__name) the page does not have.
const OBSERVER = `(() => {
  window.__usable = null;
  const check = () => {
    const e = window.__expect;
    if (!e || window.__usable !== null) return;
    if (!document.querySelector('#orch-h')?.textContent?.includes('Orchestrator of ' + e.name)) return;
    if (!document.querySelector('section.orchestrator[data-state=working] button')) return;
    const slots = [...document.querySelectorAll('section.slot')];
    if (slots.length !== e.slots) return;
    if (!slots.every((s) => s.querySelector('button') && /passed/.test(s.textContent ?? ''))) return;
    if (!slots[0].textContent?.includes('#' + e.issue + ' ')) return;
    window.__usable = performance.now();
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();`;

async function context(i: Instance): Promise<BrowserContext> {
  const ctx = await browser.newContext();
  const { cookie } = await signIn(i.server.url, i.server.admin.email, i.server.admin.password);
  const [name, value] = cookie.split('=');
  await ctx.addCookies([{ name, value, url: i.server.url }]);
  await ctx.addInitScript({ content: OBSERVER });
  return ctx;
}

const expect = (page: Page, i: Instance, k: number) =>
  page.evaluate(([name, slots, issue]) => {
    const w = window as unknown as { __expect: unknown; __usable: number | null };
    w.__expect = { name, slots, issue };
    w.__usable = null;
  }, [i.projects[k].name, i.slots, k * 100 + 1] as const);
const usable = async (page: Page) => {
  await page.waitForFunction(() => (window as unknown as { __usable: number | null }).__usable !== null, null, { timeout: 30_000 }).catch(async (e) => {
    const state = await page.evaluate(() => JSON.stringify((window as unknown as { __expect: unknown }).__expect));
    throw new Error(`${e.message}\nwaiting for ${state}\npage: ${(await page.textContent('main'))?.slice(0, 1500)}`);
  });
  return page.evaluate(() => (window as unknown as { __usable: number }).__usable);
};

/** One round on an instance: a cold load of the first project's fleet, a warm reload, a switch to the second project's. */
async function round(i: Instance): Promise<{ cold: number; warm: number; switch: number }> {
  const ctx = await context(i);
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  // What to wait for is set before the app runs, on every load of this page.
  await page.addInitScript(([name, slots]) => ((window as unknown as { __expect: unknown }).__expect = { name, slots, issue: 1 }), [i.projects[0].name, i.slots] as const);
  await page.goto(`${i.server.url}/#/fleet/${i.projects[0].id}`);
  const cold = await usable(page);
  await page.reload();
  const warm = await usable(page);
  await expect(page, i, 1);
  const t0 = await page.evaluate((id) => {
    const t = performance.now();
    location.hash = `#/fleet/${id}`;
    return t;
  }, i.projects[1].id);
  const switched = (await usable(page)) - t0;
  await ctx.close();
  assert.equal(errors, []);
  return { cold, warm, switch: switched };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('the Fleet page of 50 projects × 8 slots: time until usable (reported), against 2 projects × 1 slot in the same run', async () => {
  const load = loadavg()[0];
  await round(instances.base); // a first, unmeasured round each: the servers' and the browser's first-use costs
  await round(instances.scale);
  const runs: Record<'scale' | 'base', { cold: number; warm: number; switch: number }[]> = { scale: [], base: [] };
  for (let r = 0; r < ROUNDS; r++) for (const k of ['base', 'scale'] as const) runs[k].push(await round(instances[k]));
  const stat = (k: 'scale' | 'base', f: 'cold' | 'warm' | 'switch') => {
    const xs = runs[k].map((x) => x[f]);
    return { median: Math.round(median(xs)), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) };
  };
  const figure: Record<string, unknown> = { rounds: ROUNDS, loadavgStart: Number(load.toFixed(2)), loadavgEnd: Number(loadavg()[0].toFixed(2)) };
  console.log(`fleet-usable: ${ROUNDS} rounds, load average ${load.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
  console.log('| case | 50 projects × 8 slots, median (min–max) ms | 2 × 1 baseline, median (min–max) ms | ratio of medians |');
  for (const f of ['cold', 'warm', 'switch'] as const) {
    const [a, b] = [stat('scale', f), stat('base', f)];
    figure[f] = { scale: a, base: b, ratio: Number((a.median / b.median).toFixed(2)) };
    console.log(`| ${f} | ${a.median} (${a.min}–${a.max}) | ${b.median} (${b.min}–${b.max}) | ${(a.median / b.median).toFixed(2)} |`);
  }
  console.log(`fleet-usable ${JSON.stringify(figure)}`);
});

test.run();
