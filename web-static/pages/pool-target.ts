// The target fields of the trigger and schedule forms (docs/runner.md "Runner pools"): where the runs go
// (the primary runner or the pool), the tags a pool runner must have, how long a pool run may wait and
// whether one lost with its runner is tried once more. One component, so both forms say it the same way.
import { html } from 'htm/preact';
import { FieldError } from '../components.ts';

/** The four settings as a form holds them: tags and minutes as typed. */
export interface TargetDraft {
  target: 'primary' | 'pool';
  targetTags: string;
  queueTimeoutMinutes: string;
  retryOnRunnerLoss: boolean;
}
export const BLANK_TARGET: TargetDraft = { target: 'primary', targetTags: '', queueTimeoutMinutes: '30', retryOnRunnerLoss: false };

export const targetDraftOf = (t: { target: 'primary' | 'pool'; targetTags: string[]; queueTimeoutMinutes: number; retryOnRunnerLoss: boolean }): TargetDraft => ({
  target: t.target,
  targetTags: t.targetTags.join(', '),
  queueTimeoutMinutes: String(t.queueTimeoutMinutes),
  retryOnRunnerLoss: t.retryOnRunnerLoss,
});

/** The API body's fields: the pool-only ones only with the pool target (the API refuses them otherwise). */
export function targetBody(d: TargetDraft): Record<string, unknown> {
  const minutes = Number(d.queueTimeoutMinutes);
  const timeout = { queueTimeoutMinutes: d.queueTimeoutMinutes.trim() && Number.isFinite(minutes) ? minutes : d.queueTimeoutMinutes };
  if (d.target === 'primary') return { target: 'primary', ...timeout };
  const tags = d.targetTags.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
  return { target: 'pool', targetTags: tags, ...timeout, retryOnRunnerLoss: d.retryOnRunnerLoss };
}

/** The fields, with the API's errors beside each; `set` takes the draft key and the event. */
export function TargetFields({ d, set, fields }: { d: TargetDraft; set: (k: keyof TargetDraft) => (e: Event) => void; fields: Record<string, string> | null }) {
  const pool = d.target === 'pool';
  return html`<fieldset class="pool-target"><legend>Runs on</legend>
    <label>Target <select name="target" value=${d.target} onChange=${set('target')}>
      <option value="primary">The project's runner</option><option value="pool">Any runner of the project's pool (least loaded first)</option>
    </select></label>
    <${FieldError} fields=${fields} name="target" />
    ${pool &&
    html`<label>Runner tags <span class="muted">(a runner must have all of them; comma-separated, e.g. <code>gpu, linux</code>)</span>
        <input name="targetTags" value=${d.targetTags} onInput=${set('targetTags')} /></label>
      <${FieldError} fields=${fields} name="targetTags" />
      <label>Queue timeout, minutes <span class="muted">(a run that waits longer for a free runner fails with no_runner_available)</span>
        <input name="queueTimeoutMinutes" inputmode="decimal" value=${d.queueTimeoutMinutes} onInput=${set('queueTimeoutMinutes')} /></label>
      <${FieldError} fields=${fields} name="queueTimeoutMinutes" />
      <label class="check"><input type="checkbox" name="retryOnRunnerLoss" checked=${d.retryOnRunnerLoss} onChange=${set('retryOnRunnerLoss')} /> Try once more on another runner when its runner is lost</label>
      <${FieldError} fields=${fields} name="retryOnRunnerLoss" />`}
  </fieldset>`;
}
