// Sections of the Settings page: users (instance admins: invite with a one-time link, instance-admin
// role, disable and enable, a new password link), the caller's own personal API tokens (everyone), and
// retention (read-only: it comes from the environment, shown from the retention jobs' descriptions).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText, when } from '../api.ts';
import { Alert, Badge, CopyBlock, Dialog, FieldError, useAction } from '../components.ts';
import type { Me } from '../session.ts';
import type { PasswordLinkAnswer, SessionsEnded, TokenAnswer, TokenCreated, TokenList, UserInvited, UserList, UserListEntry } from '../../protocol/api/auth.ts';
import type { SchedulesOverview } from '../../protocol/api/schedules.ts';

type User = UserListEntry;
type Token = TokenAnswer;

/** A one-time link, shown once in a dialog with its expiry. */
function LinkDialog({ link, onClose }: { link: { who: string; url: string; expiresAt: string }; onClose: () => void }) {
  return html`<${Dialog} title=${`One-time link for ${link.who}`} onClose=${onClose}>
    <p>Send this link to ${link.who}: it sets their password, works once, until ${when(link.expiresAt)}. It is not shown again.</p>
    <${CopyBlock} text=${link.url} label="Password link" />
    <div class="actions"><button type="button" onClick=${onClose}>Done</button></div>
  </${Dialog}>`;
}

export function Users({ me }: { me: Me }) {
  const [users, setUsers] = useState<User[] | null>(null);
  const [link, setLink] = useState<{ who: string; url: string; expiresAt: string } | null>(null);
  const invite = useAction();
  const row = useAction();
  const [loadError, setLoadError] = useState<string | null>(null);
  const load = () => api<UserList>('/api/users').then((u) => (setUsers(u.users), setLoadError(null)), (e) => setLoadError(errorText(e)));
  useEffect(() => void load(), []);
  const submit = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    return invite.run(async () => {
      const out = await api<UserInvited>('/api/users', {
        method: 'POST',
        body: { email: String(f.get('email') ?? '').trim(), name: String(f.get('name') ?? '').trim(), instanceAdmin: f.get('instanceAdmin') === 'on' },
      });
      setLink({ who: out.user.email, url: out.passwordSetUrl, expiresAt: out.linkExpiresAt });
      form.reset();
      await load();
    });
  };
  const patch = (u: User, body: Record<string, unknown>) => row.run(async () => (await api(`/api/users/${u.id}`, { method: 'PATCH', body }), await load()));
  const newLink = (u: User) =>
    row.run(async () => {
      const out = await api<PasswordLinkAnswer>(`/api/users/${u.id}/password-link`, { method: 'POST' });
      setLink({ who: u.email, url: out.passwordSetUrl, expiresAt: out.linkExpiresAt });
    });
  const [notice, setNotice] = useState<string | null>(null);
  const endSessions = (u: User) =>
    row.run(async () => {
      const out = await api<SessionsEnded>(`/api/users/${u.id}/sessions`, { method: 'DELETE' });
      setNotice(`${u.email}: ${out.sessionsEnded} session${out.sessionsEnded === 1 ? '' : 's'} ended`);
    });
  return html`<section class="card users" aria-labelledby="users-h">
    <h3 id="users-h">Users</h3>
    <form class="grid invite" onSubmit=${submit} aria-label="Invite a user" novalidate>
      <label>E-mail <input name="email" type="email" required maxlength="254" /><${FieldError} fields=${invite.fields} name="email" /></label>
      <label>Name <input name="name" required maxlength="200" /><${FieldError} fields=${invite.fields} name="name" /></label>
      <label class="check"><input name="instanceAdmin" type="checkbox" /> Instance admin</label>
      <div class="full"><${Alert} error=${invite.error} /><button disabled=${invite.busy}>Invite</button>
        <span class="hint"> They get a one-time link to set their password; give them roles on <a href="#/projects">projects</a>.</span></div>
    </form>
    <${Alert} error=${row.error ?? loadError} />
    ${notice && html`<p class="banner ok" role="status">${notice}</p>`}
    ${users === null
      ? html`<p class="muted">Loading…</p>`
      : html`<div class="scroll"><table class="users-table"><thead><tr><th>User</th><th>Status</th><th>Instance admin</th><th><span class="muted">Actions</span></th></tr></thead><tbody>
          ${users.map((u) => {
            const self = u.id === me.user.id;
            return html`<tr data-user=${u.email}>
              <td>${u.name}<div class="muted">${u.email}</div></td>
              <td>${u.active ? html`<${Badge} text=${u.passwordSet || u.sso ? 'active' : 'invited'} tone=${u.passwordSet || u.sso ? 'ok' : 'warn'} />` : html`<${Badge} text="disabled" />`}
                ${u.sso && html` <${Badge} text="SSO" />`}</td>
              <td><label class="check"><input type="checkbox" checked=${u.instanceAdmin} disabled=${self || row.busy} aria-label=${`${u.email} is an instance admin`}
                onChange=${(e: Event) => patch(u, { instanceAdmin: (e.target as HTMLInputElement).checked })} /> ${u.instanceAdmin ? 'yes' : 'no'}</label></td>
              <td class="actions">${!self &&
                html`<button type="button" class="secondary" onClick=${() => patch(u, { active: !u.active })} disabled=${row.busy}>${u.active ? 'Disable' : 'Enable'}</button>
                  <button type="button" class="secondary" onClick=${() => newLink(u)} disabled=${row.busy}>New password link</button>
                  <button type="button" class="secondary" onClick=${() => endSessions(u)} disabled=${row.busy} title="Sign them out everywhere now">End sessions</button>`}</td>
            </tr>`;
          })}</tbody></table></div>`}
    ${link && html`<${LinkDialog} link=${link} onClose=${() => setLink(null)} />`}
  </section>`;
}

export function Tokens() {
  const [tokens, setTokens] = useState<Token[] | null>(null);
  const [made, setMade] = useState<{ name: string; token: string } | null>(null);
  const { error, fields, busy, run } = useAction();
  const load = () => api<TokenList>('/api/tokens').then((t) => setTokens(t.tokens));
  useEffect(() => void load().catch(() => setTokens([])), []);
  const submit = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const expires = String(f.get('expiresAt') ?? '');
    return run(async () => {
      const out = await api<TokenCreated>('/api/tokens', { method: 'POST', body: { name: String(f.get('name') ?? '').trim(), ...(expires ? { expiresAt: new Date(`${expires}T23:59:59`).toISOString() } : {}) } });
      setMade({ name: out.name, token: out.token });
      form.reset();
      await load();
    });
  };
  const revoke = (t: Token) => run(async () => (await api(`/api/tokens/${t.id}`, { method: 'DELETE' }), await load()));
  const live = (tokens ?? []).filter((t) => !t.revokedAt);
  return html`<section class="card tokens" aria-labelledby="tokens-h">
    <h3 id="tokens-h">Your API tokens</h3>
    <p class="muted">For scripts and CI: send it as <code>Authorization: Bearer …</code>. A token acts as you, with your roles.</p>
    <form class="grid" onSubmit=${submit} aria-label="New API token" novalidate>
      <label>Name <input name="name" required maxlength="200" placeholder="ci-deploy" /><${FieldError} fields=${fields} name="name" /></label>
      <label>Expires (optional) <input name="expiresAt" type="date" /><${FieldError} fields=${fields} name="expiresAt" /></label>
      <div class="full"><button disabled=${busy}>Create token</button></div>
    </form>
    <${Alert} error=${error} />
    ${made && html`<div class="banner ok new-token" role="status"><p>Token <strong>${made.name}</strong>: copy it now, it is not shown again.</p><${CopyBlock} text=${made.token} label="API token" /></div>`}
    ${tokens === null
      ? html`<p class="muted">Loading…</p>`
      : live.length === 0
        ? html`<p class="empty">No tokens. Create one above when a script needs the API.</p>`
        : html`<div class="scroll"><table><thead><tr><th>Name</th><th>Created</th><th>Last used</th><th>Expires</th><th><span class="muted">Actions</span></th></tr></thead><tbody>
            ${live.map((t) => html`<tr data-token=${t.name}><td>${t.name} <code>${t.prefix}…</code></td><td>${when(t.createdAt)}</td><td>${when(t.lastUsedAt)}</td><td>${t.expiresAt ? when(t.expiresAt) : 'never'}</td>
              <td class="actions"><button type="button" class="secondary danger" onClick=${() => revoke(t)} disabled=${busy}>Revoke</button></td></tr>`)}
          </tbody></table></div>`}
  </section>`;
}

export function Retention() {
  const [jobs, setJobs] = useState<SchedulesOverview['jobs'] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<SchedulesOverview>('/api/schedules')
      .then((s) => setJobs(s.jobs.filter((j) => j.name.startsWith('retention.'))))
      .catch((e) => setError(errorText(e)));
  }, []);
  return html`<section class="card retention" aria-labelledby="retention-h">
    <h3 id="retention-h">Retention</h3>
    <p class="muted">Read-only: set in the server's environment (docs/operations.md, "Retention"); the jobs run on the <a href="#/schedules">Schedules</a> page's times.</p>
    <${Alert} error=${error} />
    ${jobs && html`<ul>${jobs.map((j) => html`<li data-job=${j.name}>${j.description} <span class="muted">(<code>${j.cron}</code>, next ${when(j.nextRunAt)})</span></li>`)}</ul>`}
  </section>`;
}
