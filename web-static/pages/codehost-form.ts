// The Projects page's form for a project's code host (issue 42; docs/gitlab.md step 2), for project
// admins: kind (GitLab; a project without one is on GitHub, its repository above), base URL, project
// path and an optional access token. Saving (PUT /api/projects/:id/codehost) shows the webhook URL, the
// webhook's secret token once (it is not shown again), and the token's check — GitLab's own refusal
// when it fails. The current settings come from GET …/codehost (404: none yet); the token never does.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../api.ts';
import { Alert, FieldError, useAction } from '../components.ts';
import type { ProjectCodehostAnswer } from '../../protocol/api/codehost.ts';

export function CodehostForm({ projectId, onSaved }: { projectId: string; onSaved: () => void }) {
  const { error, fields, busy, run } = useAction();
  const [current, setCurrent] = useState<ProjectCodehostAnswer | null | undefined>(undefined);
  const [saved, setSaved] = useState<ProjectCodehostAnswer | null>(null);
  const [baseUrl, setBaseUrl] = useState('https://gitlab.com');
  const [projectPath, setProjectPath] = useState('');
  const [token, setToken] = useState('');
  const input = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  useEffect(() => {
    api<ProjectCodehostAnswer>(`/api/projects/${projectId}/codehost`)
      .then((c) => (setCurrent(c), setBaseUrl(c.baseUrl), setProjectPath(c.projectPath)))
      .catch((e) => setCurrent(e instanceof ApiError && e.status === 404 ? null : undefined));
  }, [projectId]);

  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      const body = { kind: 'gitlab', baseUrl: baseUrl.trim(), projectPath: projectPath.trim(), ...(token.trim() ? { token: token.trim() } : {}) };
      const answer = await api<ProjectCodehostAnswer>(`/api/projects/${projectId}/codehost`, { method: 'PUT', body });
      setSaved(answer);
      setCurrent(answer);
      setToken('');
      onSaved();
    });
  };
  const shown = saved ?? current;
  return html`<form class="grid codehost-form" onSubmit=${submit} aria-label="Code host settings" novalidate>
    <label>Code host <select name="kind" value="gitlab" disabled><option value="gitlab">GitLab (gitlab.com or self-managed)</option></select>
      <span class="hint">Without one the project is on GitHub (its repository above).</span></label>
    <label>Base URL <input name="baseUrl" required placeholder="https://gitlab.example.com" value=${baseUrl} onInput=${input(setBaseUrl)} />
      <span class="hint">With its path prefix if it has one; a private address must be on the webhooks' address allowlist.</span><${FieldError} fields=${fields} name="baseUrl" /></label>
    <label>Project path <input name="projectPath" required placeholder="group/sub/app" value=${projectPath} onInput=${input(setProjectPath)} />
      <${FieldError} fields=${fields} name="projectPath" /></label>
    <label>Access token <input name="token" type="password" autocomplete="off" placeholder=${current?.credential === 'stored' ? 'stored — enter it again to keep one' : 'glpat-…'} value=${token} onInput=${input(setToken)} />
      <span class="hint">A project or group access token with the api and write_repository scopes, stored encrypted and never shown again. Empty: the runners use their own GITLAB_TOKEN (a stored token is removed).</span>
      <${FieldError} fields=${fields} name="token" /></label>
    <div class="full"><${Alert} error=${error} /><button disabled=${busy}>${busy ? 'Saving and checking…' : 'Save code host'}</button></div>
    ${shown &&
    html`<div class="full codehost-saved">
      <dl class="facts"><dt>Webhook URL</dt><dd><code class="webhook-url">${shown.webhookUrl}</code></dd>
        ${saved?.webhookSecret && html`<dt>Webhook secret token</dt><dd><code class="webhook-secret">${saved.webhookSecret}</code>
          <p class="banner warn" role="note">Copy it now into GitLab (Settings → Webhooks → Secret token): it is not shown again. Saving again makes a new one.</p></dd>`}
        <dt>Credential</dt><dd>${shown.credential === 'stored' ? 'the token stored here' : "the runners' own GITLAB_TOKEN"}</dd>
        <dt>Check</dt><dd class="codehost-check" data-ok=${String(shown.check.ok)}>${shown.check.ok
          ? html`<span class="ok">ok: the token can read the project and has the scopes needed</span>`
          : html`<span class="failed" role="alert">${shown.check.error ?? 'not checked'}</span>`}</dd></dl>
    </div>`}
  </form>`;
}
