// Approve on the Fleet page (issue #36 item 3): before the approval is sent, what the person approves —
// the pull request as the runner reads it from GitHub now (pr.inspect: files changed, checks, reviews,
// mergeability) and what it cost so far (GET /api/cost grouped by pull request for the project: the LLM
// requests of the sessions and runs whose branch a pr.opened event names; docs/cost.md "Attribution").
// Then Approve sends pr.approve with the optional comment (fleet.ts `send`).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api.ts';
import { Alert, Badge, Dialog, FieldError, usd } from '../components.ts';
import { projectCommand } from './fleet-command.ts';
import type { CostAnswer, CostGroup } from '../../protocol/api/cost.ts';

/** What pr.inspect answers (runner/commands/codehost.ts prInspect). */
interface Inspected {
  number: number;
  title: string;
  url: string;
  state: string;
  draft: boolean;
  branch: string;
  base: string;
  mergeable: boolean | null;
  mergeableState: string | null;
  files: { path: string; status: string; additions: number; deletions: number }[];
  filesComplete: boolean;
  additions: number;
  deletions: number;
  checks: { state: string; summary: string; items: { name: string; state: string; url: string | null }[] };
  reviews: { user: string | null; state: string; submittedAt: string | null }[];
}
type Read<T> = { ok: true; value: T } | { ok: false; error: string } | null;

/** The first files shown; the rest are counted. */
const FIRST_FILES = 10;
const tone = (state: string) => (/^(passed|success|approved|merged)$/i.test(state) ? 'ok' : /^(failed|failure|error|changes_requested)$/i.test(state) ? 'failed' : state === 'pending' ? 'warn' : 'muted');

function settle<T>(p: Promise<T>): Promise<Read<T>> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (e) => ({ ok: false as const, error: errorText(e) }),
  );
}

function Mergeability({ pr }: { pr: Inspected }) {
  if (pr.state !== 'open') return html`<${Badge} text=${pr.state} tone=${tone(pr.state)} /> not open any more`;
  const draft = pr.draft ? html` <${Badge} text="draft" tone="warn" />` : '';
  if (pr.mergeable === null) return html`<span class="muted">GitHub has not computed it yet</span>${draft}`;
  return html`<${Badge} text=${pr.mergeable ? 'mergeable' : 'not mergeable'} tone=${pr.mergeable ? 'ok' : 'failed'} />${pr.mergeableState ? ` (${pr.mergeableState})` : ''}${draft}`;
}

function Inspection({ pr }: { pr: Inspected }) {
  const more = pr.files.length - FIRST_FILES;
  return html`<dl class="facts inspect">
    <dt>Pull request</dt><dd><a href=${pr.url} rel="noreferrer" target="_blank">#${pr.number}</a> ${pr.title} <span class="muted">${pr.branch} → ${pr.base}</span></dd>
    <dt>Mergeable</dt><dd class="mergeable"><${Mergeability} pr=${pr} /></dd>
    <dt>Files</dt>
    <dd class="files">${pr.files.length}${pr.filesComplete ? '' : '+'} file${pr.files.length === 1 ? '' : 's'} changed, <span class="add">+${pr.additions}</span> <span class="del">−${pr.deletions}</span>
      <ul>${pr.files.slice(0, FIRST_FILES).map((f) => html`<li data-file=${f.path}><code>${f.path}</code> <span class="add">+${f.additions}</span> <span class="del">−${f.deletions}</span>${f.status === 'modified' ? '' : html` <span class="muted">${f.status}</span>`}</li>`)}</ul>
      ${more > 0 && html`<p class="muted">and ${more} more</p>`}</dd>
    <dt>Checks</dt>
    <dd class="checks"><${Badge} text=${pr.checks.state} tone=${tone(pr.checks.state)} /> ${pr.checks.summary}
      ${pr.checks.items.length > 0 && html`<ul>${pr.checks.items.map((c) => html`<li data-check=${c.name}>${c.url ? html`<a href=${c.url} rel="noreferrer" target="_blank">${c.name}</a>` : c.name} <${Badge} text=${c.state} tone=${tone(c.state)} /></li>`)}</ul>`}</dd>
    <dt>Reviews</dt>
    <dd class="reviews">${pr.reviews.length === 0 ? html`<span class="muted">none yet</span>` : html`<ul>${pr.reviews.map((r) => html`<li>${r.user ?? 'someone'} <${Badge} text=${r.state.toLowerCase().replace(/_/g, ' ')} tone=${tone(r.state)} /></li>`)}</ul>`}</dd>
  </dl>`;
}

function Cost({ read, pr }: { read: Read<CostGroup | null>; pr: number }) {
  if (!read) return html`<span class="muted">reading…</span>`;
  if (!read.ok) return html`<span class="failed">unknown: ${read.error}</span>`;
  if (!read.value) return html`${usd(0)} <span class="muted">(no LLM requests attributed to #${pr} yet)</span>`;
  const g = read.value;
  return html`${usd(g.costUsd)} <span class="muted">over ${g.requests} LLM request${g.requests === 1 ? '' : 's'}${g.unpricedRequests ? `, ${g.unpricedRequests} without a price` : ''}</span>`;
}

export function ApproveDialog(p: {
  projectId: string;
  pr: number;
  busy: boolean;
  /** pr.approve's refusal (the page's action): shown here too, the dialog covers the page's banner. */
  error: string | null;
  fields: Record<string, string> | null;
  onApprove: (comment: string) => unknown;
  onClose: () => void;
}) {
  const [inspected, setInspected] = useState<Read<Inspected>>(null);
  const [cost, setCost] = useState<Read<CostGroup | null>>(null);
  useEffect(() => {
    void settle(projectCommand(p.projectId, 'pr.inspect', { number: p.pr })).then((r) => setInspected(r && r.ok ? { ok: true, value: r.value.data as Inspected } : r));
    void settle(api<CostAnswer>(`/api/cost?groupBy=pull_request&projectId=${encodeURIComponent(p.projectId)}`)).then((r) =>
      setCost(r && r.ok ? { ok: true, value: r.value.groups.find((g) => g.key === String(p.pr)) ?? null } : r),
    );
  }, [p.projectId, p.pr]);
  const submit = (e: Event) => {
    e.preventDefault();
    void p.onApprove(String(new FormData(e.target as HTMLFormElement).get('text') ?? ''));
  };
  // An inspection that failed (runner offline, GitHub down or rate-limited, the token without access, the
  // PR not found) warns but does not block: an approval is only a signal file the orchestrator reads
  // (runner/commands/pr.ts), and the orchestrator checks the PR's state and checks itself before it
  // merges, so a person who has looked on GitHub may still decide. Approve waits for the reading to
  // settle, so what it says is seen first; the button then says it approves without it.
  const failed = inspected && !inspected.ok;
  return html`<${Dialog} title=${`Approve #${p.pr}`} onClose=${p.onClose}>
    <div class="approve-panel" aria-live="polite" data-inspected=${inspected ? (inspected.ok ? 'ok' : 'failed') : 'reading'}>
      ${!inspected ? html`<p class="muted">Reading #${p.pr} from GitHub…</p>` : inspected.ok ? html`<${Inspection} pr=${inspected.value} />` : html`<p class="banner warn inspect-error" role="alert">Could not read #${p.pr}: ${inspected.error}. You can still approve (the orchestrator checks the pull request again before it merges), but look at it on GitHub first.</p>`}
      <dl class="facts"><dt>Cost so far</dt><dd class="cost"><${Cost} read=${cost} pr=${p.pr} /></dd></dl>
    </div>
    <form onSubmit=${submit}>
      <label>Comment (optional)<textarea name="text" rows="4" maxlength="10000"></textarea></label>
      <${FieldError} fields=${p.fields} name="comment" />
      <${Alert} error=${p.error} />
      <div class="actions"><button type="button" class="secondary" onClick=${p.onClose}>Cancel</button><button disabled=${p.busy || !inspected}>${failed ? 'Approve without the inspection' : 'Approve'}</button></div>
    </form>
  </${Dialog}>`;
}
