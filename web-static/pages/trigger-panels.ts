// The parts of the Inbound triggers section (pages/triggers.ts; docs/triggers.md) that open for one
// trigger: the create/edit form with the API's field errors beside each input, the dry run with a JSON
// editor, and the delivery log (refreshes every 5 s while open, paged with the API's nextBefore).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { DEFAULT_VALUE_PATTERN } from '../../protocol/placeholders.ts';
import { failedStartReason, startReasonWords } from '../../protocol/start-reasons.ts';
import { ApiError, api, errorText, when } from '../api.ts';
import { FieldError, RichText } from '../components.ts';
import { samplePayload } from '../trigger-snippets.ts';
import { BLANK_TARGET, TargetFields, targetBody, targetDraftOf } from './pool-target.ts';
import type { TargetDraft } from './pool-target.ts';
import type { DeliveryAnswer, DeliveryList, DryRunAnswer, PayloadReason, TriggerAnswer, TriggerSettings } from '../../protocol/api/triggers.ts';

export type Reason = PayloadReason;
export type Delivery = DeliveryAnswer;
/** A trigger as one answer, or as listed with its last delivery. */
export type Trigger = TriggerAnswer & { lastDelivery?: DeliveryAnswer | null };

export const statusClass = (s: Delivery['status']) => (s === 'fired' || s === 'accepted' ? 'ok' : s === 'failed' || s === 'refused' ? 'failed' : s === 'firing' ? 'running' : 'muted');

/** The form's fields: the settings as typed (text, one item a line), the choices as they are. */
type Draft = Record<Exclude<keyof TriggerSettings, Choice | keyof TargetDraft>, string> & Pick<TriggerSettings, Choice> & TargetDraft;
type Choice = 'action' | 'output' | 'enabled';
const BLANK: Draft = { name: '', action: 'skill', skill: '', args: '', profile: '', model: '', output: 'report', allowedPaths: '', valuePattern: DEFAULT_VALUE_PATTERN, enabled: true, capUSD: '', ...BLANK_TARGET };
const draftOf = (t: Trigger): Draft => ({
  name: t.name,
  action: t.action,
  skill: t.skill ?? '',
  args: t.args.join('\n'),
  profile: t.profile ?? '',
  model: t.model ?? '',
  output: t.output,
  allowedPaths: t.allowedPaths.join('\n'),
  valuePattern: t.valuePattern,
  enabled: t.enabled,
  capUSD: t.capUSD === null ? '' : String(t.capUSD),
  ...targetDraftOf(t),
});
/** One item per non-empty line, trimmed: what `args.<n>` and `allowedPaths.<n>` in an answer count. */
const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter(Boolean);

/** The API body for a draft: the skill fields only with the skill action (the API refuses them otherwise). */
function bodyOf(d: Draft): Record<string, unknown> {
  const common = { name: d.name.trim(), action: d.action, allowedPaths: lines(d.allowedPaths), valuePattern: d.valuePattern, enabled: d.enabled };
  if (d.action === 'next_round') return common;
  const orNull = (s: string) => s.trim() || null;
  return { ...common, skill: orNull(d.skill), args: lines(d.args), profile: orNull(d.profile), model: orNull(d.model), output: d.output, capUSD: d.capUSD.trim() ? Number(d.capUSD) : null, ...targetBody(d) };
}

/** Create (no `trigger`) or edit a trigger; `save` throws the API's error, shown here field by field. */
export function TriggerForm({ trigger, save, onCancel }: { trigger?: Trigger; save: (body: Record<string, unknown>) => Promise<void>; onCancel?: () => void }) {
  const [d, setD] = useState<Draft>(trigger ? draftOf(trigger) : BLANK);
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof Draft) => (e: Event) => {
    const el = e.target as HTMLInputElement;
    setD({ ...d, [k]: el.type === 'checkbox' ? el.checked : el.value });
  };
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const tidy = { ...d, args: lines(d.args).join('\n'), allowedPaths: lines(d.allowedPaths).join('\n') };
    setD(tidy); // line numbers in field errors count the lines sent
    setBusy(true);
    try {
      await save(bodyOf(tidy));
      setFields(null);
      setProblem(null);
      if (!trigger) setD(BLANK);
    } catch (e) {
      const named = e instanceof ApiError && e.fields && Object.keys(e.fields).length ? e.fields : null;
      setFields(named);
      setProblem(named ? 'Fix the fields marked in red.' : errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const skill = d.action === 'skill';
  return html`<form class=${`card trigger-form${trigger ? ' edit' : ''}`} onSubmit=${submit}>
    ${trigger && html`<h4>Edit ${trigger.name}</h4>`}
    <label>Name <input name="name" value=${d.name} onInput=${set('name')} required maxlength="100" /></label>
    <${FieldError} fields=${fields} name="name" />
    <label>Action <select name="action" value=${d.action} onChange=${set('action')}>
      <option value="skill">Run a skill</option><option value="next_round">Start the next orchestrator round</option>
    </select></label>
    <${FieldError} fields=${fields} name="action" />
    ${skill &&
    html`<label>Skill <input name="skill" value=${d.skill} onInput=${set('skill')} placeholder="review" /></label>
      <${FieldError} fields=${fields} name="skill" />
      <label>Args, one per line <span class="muted">(may hold <code>${'{{payload.<path>}}'}</code>)</span>
        <textarea name="args" rows="3" value=${d.args} onInput=${set('args')} placeholder=${'--ref\n{{payload.ref}}'}></textarea></label>
      <${FieldError} fields=${fields} name="args" />
      <label>Profile <span class="muted">(optional)</span> <input name="profile" value=${d.profile} onInput=${set('profile')} /></label>
      <${FieldError} fields=${fields} name="profile" />
      <label>Model <span class="muted">(optional)</span> <input name="model" value=${d.model} onInput=${set('model')} /></label>
      <${FieldError} fields=${fields} name="model" />
      <label>Cap per run, USD <span class="muted">(optional; else the project's)</span> <input name="capUSD" inputmode="decimal" value=${d.capUSD} onInput=${set('capUSD')} /></label>
      <${FieldError} fields=${fields} name="capUSD" />
      <label>Output <select name="output" value=${d.output} onChange=${set('output')}>
        <option value="report">Report</option><option value="pull_request">Pull request</option>
      </select></label>
      <${FieldError} fields=${fields} name="output" />
      <${TargetFields} d=${d} set=${set} fields=${fields} />`}
    <label>Allowed paths, one per line <span class="muted">(the payload paths placeholders may use, e.g. <code>pr.number</code>)</span>
      <textarea name="allowedPaths" rows="2" value=${d.allowedPaths} onInput=${set('allowedPaths')}></textarea></label>
    <${FieldError} fields=${fields} name="allowedPaths" />
    <label>Value pattern <span class="muted">(default <code>${DEFAULT_VALUE_PATTERN}</code>; RE2 syntax: no backreferences or lookaround; must match the whole value)</span>
      <input name="valuePattern" value=${d.valuePattern} onInput=${set('valuePattern')} placeholder=${DEFAULT_VALUE_PATTERN} /></label>
    <${FieldError} fields=${fields} name="valuePattern" />
    <label class="check"><input type="checkbox" name="enabled" checked=${d.enabled} onChange=${set('enabled')} /> Enabled</label>
    ${problem && html`<p class="failed" role="alert">${problem}</p>`}
    <div><button disabled=${busy}>${trigger ? 'Save trigger' : 'Create trigger'}</button>
      ${onCancel && html` <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>`}</div>
  </form>`;
}

/** A delivery that started nothing, in words (the reason the Runs page shows for it); null otherwise. */
export function outcomeWords(d: Pick<Delivery, 'status' | 'reason' | 'detail'>): string | null {
  if (!d.reason || !(d.status === 'failed' || d.status === 'skipped')) return null;
  return `${d.status === 'failed' ? 'Did not start' : 'Skipped'}: ${startReasonWords(failedStartReason(d.reason, d.detail))}`;
}

type Verdict =
  | { kind: 'fire'; args: string[]; notes: string[] }
  | { kind: 'fail'; args: string[]; notes: string[]; reason: string; message: string; remedy: string | null }
  | { kind: 'refused'; reasons: Reason[] }
  | { kind: 'error'; message: string };

/** Dry run: a sample payload in a JSON editor (checked as JSON here first) → would fire / would be refused. */
export function DryRun({ base, trigger }: { base: string; trigger: Trigger }) {
  const [text, setText] = useState(() => JSON.stringify(samplePayload(trigger.allowedPaths, trigger.valuePattern), null, 2));
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const run = async (ev: Event) => {
    ev.preventDefault();
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch (e) {
      return setVerdict({ kind: 'error', message: `Not valid JSON: ${(e as Error).message}` });
    }
    try {
      const r = await api<DryRunAnswer>(`${base}/${trigger.id}/dry-run`, { method: 'POST', body: { payload } });
      if (r.verdict === 'would_fail') setVerdict({ kind: 'fail', args: r.args, notes: r.notes, reason: r.reason, message: r.message, remedy: r.remedy });
      else setVerdict({ kind: 'fire', args: r.args, notes: r.notes });
    } catch (e) {
      const reasons = e instanceof ApiError && e.status === 422 ? (e.body as { reasons?: Reason[] })?.reasons : undefined;
      setVerdict(reasons ? { kind: 'refused', reasons } : { kind: 'error', message: errorText(e) });
    }
  };
  return html`<form class="dry-run" onSubmit=${run}>
    <label>Sample payload (JSON, what a caller would POST)
      <textarea name="payload" rows="8" spellcheck="false" value=${text} onInput=${(e: Event) => setText((e.target as HTMLTextAreaElement).value)}></textarea></label>
    <button>Dry run</button> <span class="muted">Fires nothing and records nothing.</span>
    ${verdict?.kind === 'error' && html`<p class="failed" role="alert">${verdict.message}</p>`}
    ${verdict?.kind === 'fire' &&
    html`<div class="verdict" role="status"><p class="ok"><strong>Would fire</strong>${trigger.action === 'skill' ? html`: <code>${trigger.skill}</code> with these args` : ': the next orchestrator round'}</p>
      ${verdict.args.length > 0 && html`<ol class="args">${verdict.args.map((a) => html`<li><code>${a}</code></li>`)}</ol>`}
      ${verdict.notes.map((n) => html`<p class="muted">${n}</p>`)}</div>`}
    ${verdict?.kind === 'fail' &&
    html`<div class="verdict" role="status" data-reason=${verdict.reason}><p class="failed"><strong>Would not start now</strong>: ${verdict.message} <span class="muted">(<code>${verdict.reason}</code>)</span></p>
      ${verdict.remedy && html`<p class="remedy"><${RichText} text=${verdict.remedy} /></p>`}
      <p class="muted">The payload itself is accepted: a call now gets 202${trigger.action === 'skill' ? ', with these args' : ''}, and the run is recorded as not started.</p>
      ${verdict.args.length > 0 && html`<ol class="args">${verdict.args.map((a) => html`<li><code>${a}</code></li>`)}</ol>`}
      ${verdict.notes.map((n) => html`<p class="muted">${n}</p>`)}</div>`}
    ${verdict?.kind === 'refused' &&
    html`<div class="verdict" role="status"><p class="failed"><strong>Would be refused</strong> (422 <code>invalid_payload</code>), nothing would fire:</p>
      <ul class="reasons">${verdict.reasons.map((r) => html`<li><code>${r.field}</code> ${r.message} <span class="muted">(${r.code})</span></li>`)}</ul></div>`}
  </form>`;
}

const PAGE = 20;

/** What a delivery's status means in words: its reason(s), the runner's detail, the rendered args. */
function Outcome({ d }: { d: Delivery }) {
  const words = outcomeWords(d);
  return html`${d.reason && html`<div><code>${d.reason}</code></div>`}${words && html`<div class="outcome-words">${words}</div>`}
    ${d.reasons.length > 0 && html`<ul class="reasons">${d.reasons.map((r) => html`<li><code>${r.field}</code> ${r.message}</li>`)}</ul>`}
    ${d.detail && html`<div class="muted">${d.detail}</div>`}
    ${d.args && d.args.length > 0 && html`<div class="muted">args: ${d.args.map((a) => html`<code>${a}</code> `)}</div>`}`;
}

/** The delivery log, newest first, PAGE rows at a time; refreshes while open. */
export function TriggerLog({ base, trigger, onError }: { base: string; trigger: Trigger; onError: (m: string) => void }) {
  const [cursors, setCursors] = useState<string[]>([]); // the `before` of each page opened: empty = the newest page
  const [page, setPage] = useState<DeliveryList | null>(null);
  const before = cursors[cursors.length - 1];
  useEffect(() => {
    let live = true;
    const load = () =>
      api<DeliveryList>(`${base}/${trigger.id}/deliveries?limit=${PAGE}${before ? `&before=${encodeURIComponent(before)}` : ''}`)
        .then((r) => live && setPage(r))
        .catch((e) => live && onError(errorText(e)));
    void load();
    const t = setInterval(load, 5000); // deliveries arrive and move on by themselves: keep the open log current
    return () => ((live = false), clearInterval(t));
  }, [trigger.id, before]);
  if (!page) return html`<p class="muted">Loading deliveries…</p>`;
  return html`<div class="trigger-log">
    ${page.deliveries.length === 0
      ? html`<p class="muted">${before ? 'No older deliveries.' : 'No deliveries in the last 30 days.'}</p>`
      : html`<div class="scroll"><table class="trigger-deliveries">
          <thead><tr><th>Received</th><th>Delivery id</th><th>Status</th><th>Why</th><th>Run</th></tr></thead>
          <tbody>${page.deliveries.map(
            (d) => html`<tr data-delivery=${d.deliveryId}>
              <td>${when(d.createdAt)}</td>
              <td><code>${d.deliveryId}</code></td>
              <td><span class=${statusClass(d.status)}>${d.status}</span></td>
              <td><${Outcome} d=${d} /></td>
              <td>${d.runId ? html`<a href=${`#/runs?run=${encodeURIComponent(d.runId)}`}>Open run</a>` : '—'}</td>
            </tr>`,
          )}</tbody>
        </table></div>`}
    <div class="pager">
      ${cursors.length > 0 && html`<button class="secondary" onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button> `}
      ${page.nextBefore && html`<button class="secondary" onClick=${() => setCursors([...cursors, page.nextBefore!])}>Older</button>`}
    </div>
  </div>`;
}
