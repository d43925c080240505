// Audit log (#/audit, instance admins; functions/audit/routes.ts): the latest verification of the hash
// chain first — a failed one as a red alert at the top that names the first broken record — then the
// records, newest first, filtered by actor, action, target and time (kept in the hash, so a filtered
// view is a link), paged with the API's cursor. The verification is re-read when an
// `audit.verification` notice says a run finished (any replica, scheduled or Verify now), and after a
// reconnect gap; nothing polls.
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, when } from '../api.ts';
import { Alert, FieldError, hashOf, hashQuery } from '../components.ts';
import { useLiveRefetch } from '../live.ts';
import type { AuditPage, AuditRecordAnswer, VerificationAnswer, VerificationState } from '../../protocol/api/audit.ts';
import type { UserList } from '../../protocol/api/auth.ts';

type AuditRecord = AuditRecordAnswer;
/** Verify now gives up waiting for its result after this long (the job failed: the schedules page says why). */
const VERIFY_WAIT_MS = 120_000;

type Verification = VerificationAnswer;

const FILTERS = ['actor', 'action', 'targetType', 'targetId', 'since', 'until'] as const;
const PAGE = 50;

/** A datetime-local value (the browser's local time) as ISO 8601 with a zone; '' stays ''. */
const toIso = (local: string) => (local ? new Date(local).toISOString() : '');
/** ISO 8601 back to what a datetime-local input shows. */
function toLocal(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

const records = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'record' : 'records'}`;

/** What a run checked, in words: the whole chain, or the records added since the previous checkpoint. */
function checkedText(x: Verification): string {
  if (x.scope === 'full') return `${records(x.recordsChecked)} checked (the whole chain)`;
  return `${records(x.recordsChecked)} added since the previous checkpoint checked`;
}

function VerificationBanner({ onRun }: { onRun: () => void }) {
  type State = VerificationState;
  const [v, setV] = useState<State | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [started, setStarted] = useState(false);
  /** While Verify now waits: the finishedAt before it, and the give-up timer. */
  const waiting = useRef<{ before: string | null; timer: ReturnType<typeof setTimeout> } | null>(null);
  const done = () => {
    if (!waiting.current) return;
    clearTimeout(waiting.current.timer);
    waiting.current = null;
    setStarted(false);
    onRun();
  };
  const load = () =>
    api<State>('/api/audit/verification').then(
      (now) => {
        setV(now);
        setError(null);
        const w = waiting.current;
        if (w && now.verification && now.verification.finishedAt !== w.before) done();
      },
      (e) => setError(errorText(e)),
    );
  useEffect(() => {
    void load();
    return () => clearTimeout(waiting.current?.timer);
  }, []);
  useLiveRefetch('audit.verification', load);
  // Verify now: the job runs in the background; its result arrives as an audit.verification notice.
  const verify = async () => {
    try {
      await api('/api/schedules/audit.verify/run', { method: 'POST' });
      setStarted(true);
      waiting.current = { before: v?.verification?.finishedAt ?? null, timer: setTimeout(() => void load().then(done), VERIFY_WAIT_MS) };
      await load(); // it may have finished already
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (error) return html`<${Alert} error=${`Could not read the verification: ${error}`} />`;
  if (!v) return html`<p class="muted">Loading…</p>`;
  const x = v.verification;
  const next = v.nextRunAt ? html` Next run: ${when(v.nextRunAt)}.` : null;
  const button = html`<button type="button" class="secondary" onClick=${verify} disabled=${started}>${started ? 'Verifying…' : 'Verify now'}</button>`;
  if (!x) return html`<div class="banner warn verification" data-verified="never" role="status"><h3>Not verified yet</h3><p>The chain of audit records has not been checked yet.${next}</p>${button}</div>`;
  if (!x.ok && x.reason === 'other_instance') {
    return html`<div class="banner failed verification" data-verified="failed" data-reason="other_instance" data-finished=${x.finishedAt} role="alert">
      <h3>Audit log verification FAILED: the anchor file is not this database's</h3>
      <p><strong>${x.problem}</strong>.</p>
      <p>This database's records were not compared with that file. See docs/security.md, "An anchor file of another instance", for what to do.${next}</p>
      ${button}
    </div>`;
  }
  if (!x.ok) {
    return html`<div class="banner failed verification" data-verified="failed" data-finished=${x.finishedAt} role="alert">
      <h3>Audit log verification FAILED</h3>
      <p><strong>${x.problem ?? 'the chain does not verify'}</strong>${x.firstBrokenSeq !== null && html` — first broken record: #${x.firstBrokenSeq}`}.</p>
      <p>Checked ${records(x.recordsChecked)} (${x.scope === 'full' ? 'the whole chain' : 'since the last checkpoint'}) at ${when(x.finishedAt)}. Records may have been changed or removed outside svc: see docs/security.md, "Audit log".${next}</p>
      ${button}
    </div>`;
  }
  return html`<div class="banner ok verification" data-verified="ok" data-finished=${x.finishedAt} role="status">
    <p><strong>Chain verified</strong>${x.verifiedThroughSeq ? ` through record #${x.verifiedThroughSeq}` : ''}: ${checkedText(x)}, last run ${when(x.finishedAt)}.${next}</p>${button}
  </div>`;
}

export function Audit() {
  const q = hashQuery();
  const [users, setUsers] = useState<{ id: string; email: string }[]>([]);
  const [records, setRecords] = useState<AuditRecord[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const cursor = q.get('cursor');
  const key = FILTERS.map((f) => q.get(f) ?? '').join('|') + `|${cursor ?? ''}`;
  useEffect(() => void api<UserList>('/api/users').then((u) => setUsers(u.users), () => {}), []);
  /** The filters and page the shown records belong to. */
  const shown = useRef<string | null>(null);
  useEffect(() => {
    const params = new URLSearchParams({ limit: String(PAGE) });
    for (const f of FILTERS) if (q.get(f)) params.set(f, q.get(f)!);
    if (cursor) params.set('cursor', cursor);
    // Other filters or another page: "Loading…". The same ones read again (after Verify now): the rows
    // stay until the new ones arrive, without a flash of an empty page.
    if (shown.current !== key) setRecords(null);
    // An answer that arrives after the filters changed again is dropped, whatever order they come in.
    let current = true;
    api<AuditPage>(`/api/audit?${params}`)
      .then((r) => {
        if (!current) return;
        shown.current = key;
        setRecords(r.records);
        setNext(r.nextCursor);
        setFields(null);
        setError(null);
      })
      .catch((e) => {
        if (!current) return;
        shown.current = key;
        setRecords([]);
        if (e instanceof ApiError && e.fields) setFields(e.fields);
        else setError(errorText(e));
      });
    return () => {
      current = false;
    };
  }, [key, version]);

  const filter = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const get = (n: string) => String(f.get(n) ?? '').trim();
    location.hash = hashOf('audit', { actor: get('actor'), action: get('action'), targetType: get('targetType'), targetId: get('targetId'), since: toIso(get('since')), until: toIso(get('until')) });
  };
  const current = Object.fromEntries(FILTERS.map((f) => [f, q.get(f) ?? ''])) as Record<(typeof FILTERS)[number], string>;
  const email = (id: string | null) => users.find((u) => u.id === id)?.email;
  const filtered = FILTERS.some((f) => current[f]);

  return html`<${VerificationBanner} onRun=${() => setVersion((n) => n + 1)} />
    <form class="filters audit-filters" onSubmit=${filter} key=${key} aria-label="Filter audit records">
      <label>Actor <select name="actor" value=${current.actor}>
          <option value="">anyone</option>
          ${users.map((u) => html`<option value=${u.id}>${u.email}</option>`)}
          ${current.actor && !users.some((u) => u.id === current.actor) && html`<option value=${current.actor}>${current.actor}</option>`}
        </select><${FieldError} fields=${fields} name="actor" /></label>
      <label>Action <input name="action" placeholder="project.update" defaultValue=${current.action} /><${FieldError} fields=${fields} name="action" /></label>
      <label>Target type <input name="targetType" placeholder="project" defaultValue=${current.targetType} /><${FieldError} fields=${fields} name="targetType" /></label>
      <label>Target id <input name="targetId" defaultValue=${current.targetId} /><${FieldError} fields=${fields} name="targetId" /></label>
      <label>From <input name="since" type="datetime-local" defaultValue=${toLocal(current.since)} /><${FieldError} fields=${fields} name="since" /></label>
      <label>Until <input name="until" type="datetime-local" defaultValue=${toLocal(current.until)} /><${FieldError} fields=${fields} name="until" /></label>
      <div class="buttons"><button>Filter</button>${filtered && html`<a href="#/audit">Clear</a>`}</div>
    </form>
    <${Alert} error=${error} />
    ${records === null
      ? html`<p class="muted">Loading…</p>`
      : records.length === 0
        ? html`<p class="empty" role="note">${filtered || cursor ? 'No records match. Widen the filters or clear them.' : 'No audit records yet: every change made through svc is recorded here.'}</p>`
        : html`<div class="scroll"><table class="audit"><thead><tr><th>#</th><th>When</th><th>Actor</th><th>Action</th><th>Target</th><th>Change</th></tr></thead><tbody>
            ${records.map(
              (r) => html`<tr data-seq=${r.seq} data-action=${r.action}>
                <td>${r.seq}</td><td>${when(r.at)}</td>
                <td>${r.actorId ? html`<a href=${hashOf('audit', { actor: r.actorId })}>${email(r.actorId) ?? r.actorLabel ?? r.actorId}</a>` : r.actorLabel ?? '—'}</td>
                <td><a href=${hashOf('audit', { action: r.action })}><code>${r.action}</code></a></td>
                <td>${r.targetType ? html`<a href=${hashOf('audit', { targetType: r.targetType, targetId: r.targetId })}>${r.targetType} <code>${r.targetId}</code></a>` : '—'}</td>
                <td class="diff">${r.diff === null || r.diff === undefined ? html`<span class="muted">—</span>` : html`<pre>${JSON.stringify(r.diff, null, 1)}</pre>`}</td></tr>`,
            )}</tbody></table></div>`}
    <nav class="pager" aria-label="Pages of records">
      ${cursor && html`<a href=${hashOf('audit', { ...current })}>Newest</a>`}
      ${next && html`<a href=${hashOf('audit', { ...current, cursor: next })}>Older records</a>`}
    </nav>`;
}
