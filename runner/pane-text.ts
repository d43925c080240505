// Reading an agent's tmux pane (docs/orchestrator.md "Pane states"): is it working, idle, waiting for a
// person (a prompt only a person can answer) or stopped by its provider's usage limit? Pure functions
// over the captured text of Claude Code and Codex CLI screens. Only phrases are matched, never the
// box-drawing or arrow characters, which a non-UTF-8 tmux shows as `_`.

export type PaneState = 'working' | 'idle' | 'waiting' | 'quota' | 'starting';
export type PromptKind = 'permission' | 'trust' | 'question' | 'login';

export interface PaneReading {
  state: PaneState;
  prompt: { kind: PromptKind; key: string } | null;
  quota: { key: string; provider: 'anthropic' | 'openai' | null; resetsAt: string | null } | null;
}

/** Leading decoration of a TUI line: box sides, bullets, markers, selection arrows. (Non-ASCII characters in
 *  this file's code are written as \u escapes: the runner bundle stays Latin-1, docs/performance.md.) */
const DECOR = /^[\s|\u2502\u2503\u258c\u2590\u25a0\u25cf\u2022\u23bf*\u273b\u2736\u2733\u2722\u00b7_]+/u;
const clean = (line: string) => line.replace(DECOR, '').trim();

const QUESTIONS: [RegExp, PromptKind][] = [
  [/^Do you want to [^?]{1,200}\?/, 'permission'], //                    Claude Code tool permission
  [/^Would you like to (run the following command|make the following edits|proceed)/i, 'permission'], // Codex approval, plan approval
  [/^Allow command\?/, 'permission'], //                                   older Codex
  [/^(Do you trust the (files|contents) (in|of) this (folder|directory)|Is this a project you (created|trust))/i, 'trust'],
  [/^Since this folder is version controlled, you may wish to allow Codex/i, 'trust'],
  [/^(Select login method|Sign in with ChatGPT|Invalid API key|Please run \/login|OAuth token has expired)/i, 'login'],
];
/** The answer choices a person is shown under a question (any one must follow it). */
const CHOICES = /^((?:[\u276f\u203a>\u25b6]\s*)?1\.\s+(Yes|Allow|Approve|Proceed)|Yes, proceed|Yes \(y\)|.*\((y|a)\)\s*$|.*Enter to (select|confirm)|Press enter to confirm|.*\[y\/N\])/i;
/** Claude Code's AskUserQuestion and similar menus: numbered options with a selection footer. */
const MENU_FOOTER = /Enter to select .*Esc to cancel|Esc to cancel .*Enter to select/i;

const QUOTA: [RegExp, 'anthropic' | 'openai' | null][] = [
  [/^Claude (AI )?usage limit reached/i, 'anthropic'],
  [/^(5-hour|weekly|daily|session|Opus|Opus weekly|Sonnet weekly) limit reached/i, 'anthropic'],
  [/^Credit balance is too low/i, 'anthropic'],
  [/^You('ve| have) (hit|reached) your (usage |session |weekly |Opus |5-hour )?limit/i, null],
  [/^stream error: exceeded retry limit, last status: 429/i, 'openai'],
  [/^(ERROR: )?(Quota exceeded|You exceeded your current quota)/i, 'openai'],
];
const WORKING = /esc to interrupt/i;
const IDLE = [/^\s*[|\u2502]?\s*>\s*(\S.*)?[|\u2502]?\s*$/, /\? for shortcuts/, /\u23ce send|Enter to send/, /Ask Codex to do anything/, /\d+% context left/, /^\s*\u203a\s/, /^\s*>\s+Try "/];

/** A key for "the same occurrence": numbers (countdowns, times) and spacing do not count. */
const keyOf = (kind: string, line: string) => `${kind}:${line.replace(/\d+/g, '#').replace(/\s+/g, ' ').slice(0, 200)}`;

export function readPane(text: string, now: Date = new Date()): PaneReading {
  const lines = text.split('\n').map((l) => l.replace(/\s+$/, ''));
  const nonEmpty = lines.filter((l) => l.trim() !== '');
  const bottom = nonEmpty.slice(-30);
  const tail = nonEmpty.slice(-12);

  let prompt: PaneReading['prompt'] = null;
  for (let i = 0; i < bottom.length && !prompt; i++) {
    const c = clean(bottom[i]);
    for (const [re, kind] of QUESTIONS) {
      if (!re.test(c)) continue;
      const after = bottom.slice(i + 1).map(clean);
      if (kind === 'login' || after.some((l) => CHOICES.test(l) || MENU_FOOTER.test(l))) prompt = { kind, key: keyOf(kind, c) };
      break;
    }
  }
  if (!prompt && bottom.some((l) => MENU_FOOTER.test(l))) {
    const q = [...bottom].reverse().map(clean).find((l) => l.endsWith('?'));
    if (q) prompt = { kind: 'question', key: keyOf('question', q) };
  }

  let quota: PaneReading['quota'] = null;
  for (const l of nonEmpty) {
    const c = clean(l);
    const hit = QUOTA.find(([re]) => re.test(c));
    if (!hit) continue;
    const provider = hit[1] ?? (/openai|chatgpt|Upgrade to (Plus|Pro)|try again in/i.test(c) ? 'openai' : null);
    quota = { key: keyOf('quota', c), provider, resetsAt: resetTime(c, now) };
  }

  const working = tail.some((l) => WORKING.test(l));
  const state: PaneState = prompt ? 'waiting' : working ? 'working' : quota ? 'quota' : tail.some((l) => IDLE.some((re) => re.test(l))) ? 'idle' : 'starting';
  return { state, prompt, quota };
}

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };

/** When a usage limit resets, from the message: an epoch (`…|1712345678`), `try again in 2 hours 5
 *  minutes`, or `resets 3pm (Europe/Berlin)` / `will reset at 5:30pm`. Null when it does not say. */
export function resetTime(line: string, now: Date = new Date()): string | null {
  const epoch = /\|(\d{10})\b/.exec(line);
  if (epoch) return new Date(Number(epoch[1]) * 1000).toISOString();
  const rel = /try again in ((?:\d+\s*[a-z]+[\s,]*(?:and\s*)?)+)/i.exec(line);
  if (rel) {
    let ms = 0;
    for (const m of rel[1].matchAll(/(\d+)\s*([a-z]+)/gi)) {
      const unit = m[2].toLowerCase();
      const u = unit.startsWith('d') ? 'd' : unit.startsWith('h') ? 'h' : unit.startsWith('mo') ? null : unit.startsWith('m') ? 'm' : unit.startsWith('s') ? 's' : null;
      if (u) ms += Number(m[1]) * UNIT_MS[u];
    }
    return ms > 0 ? new Date(now.getTime() + ms).toISOString() : null;
  }
  const at = /resets?(?: at)? (\d{1,2})(?::(\d{2}))?\s*(am|pm)\b(?:\s*\(([A-Za-z_+\-/0-9]+)\))?/i.exec(line);
  if (!at) return null;
  let hour = Number(at[1]) % 12;
  if (at[3].toLowerCase() === 'pm') hour += 12;
  const minute = Number(at[2] ?? 0);
  const zone = at[4] ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  try {
    return nextWallClock(now, hour, minute, zone).toISOString();
  } catch {
    return null; // an unknown time zone name
  }
}

/** The first instant after `now` when the wall clock in `zone` shows hour:minute. */
function nextWallClock(now: Date, hour: number, minute: number, zone: string): Date {
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
  const wall = (d: Date) => {
    const p = Object.fromEntries(fmt.formatToParts(d).map((x) => [x.type, x.value]));
    return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  };
  const offset = (d: Date) => wall(d) - Math.floor(d.getTime() / 1000) * 1000;
  const today = new Date(wall(now));
  for (let add = 0; add < 3; add++) {
    const guess = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + add, hour, minute);
    let t = guess - offset(new Date(guess));
    t = guess - offset(new Date(t));
    if (t > now.getTime()) return new Date(t);
  }
  throw new Error('no wall-clock time found');
}
