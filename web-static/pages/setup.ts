// The first admin (`#/setup?token=…`, the link the server logs while no user exists; functions/auth/setup.ts):
// name, e-mail and password make the first instance admin, who is then signed in with them.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import type { SessionAnswer, SetupDone } from '../../protocol/api/auth.ts';
import { Alert, FieldError, useAction } from '../components.ts';

export function Setup({ token, onDone }: { token: string; onDone: () => void }) {
  const { error, fields, busy, run } = useAction();
  const [mismatch, setMismatch] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const password = String(f.get('password') ?? '');
    setMismatch(password !== f.get('again'));
    if (password !== f.get('again')) return;
    const email = String(f.get('email') ?? '');
    const made = await run(() => api<SetupDone>('/api/setup', { method: 'POST', body: { token, name: f.get('name'), email, password } }));
    if (made === undefined) return;
    // Signed in as usual; should that fail, the sign-in page is where onDone lands anyway.
    await api<SessionAnswer>('/api/session', { method: 'POST', body: { email, password } }).catch(() => {});
    onDone();
  };
  return html`<form class="card narrow setup" onSubmit=${onSubmit}>
    <h2>Create the first admin</h2>
    <p class="muted">This instance has no user yet. The account you create here is its instance admin. This link works once.</p>
    <label>Name <input name="name" autocomplete="name" required /></label>
    <${FieldError} fields=${fields} name="name" />
    <label>E-mail <input name="email" type="email" autocomplete="username" required /></label>
    <${FieldError} fields=${fields} name="email" />
    <label>Password <input name="password" type="password" autocomplete="new-password" minlength="10" required /></label>
    <${FieldError} fields=${fields} name="password" />
    <label>Repeat it <input name="again" type="password" autocomplete="new-password" minlength="10" required /></label>
    ${mismatch && html`<div class="failed field-error" data-field="again">the two passwords differ</div>`}
    <${FieldError} fields=${fields} name="token" />
    <${Alert} error=${error} />
    <button disabled=${busy}>Create admin</button>
  </form>`;
}
