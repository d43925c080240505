// Sign-in (with a hint while no user exists) and the one-time password-set page (the link `admin create` prints).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../api.ts';
import type { OidcStatus, PasswordSetAnswer, SessionAnswer, SetupState } from '../../protocol/api/auth.ts';

function useSubmit(action: (form: FormData) => Promise<void>) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await action(new FormData(e.target as HTMLFormElement));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, onSubmit };
}

/** Whether the instance has no user yet (GET /api/setup), so the page can say where the first admin comes from. */
function useSetupNeeded(): boolean | null {
  const [needed, setNeeded] = useState<boolean | null>(null);
  useEffect(() => {
    api<SetupState>('/api/setup').then((s) => setNeeded(s.needed), () => {});
  }, []);
  return needed;
}

/** Single sign-on and password sign-in as the server offers them (GET /api/auth/oidc); null while loading. */
function useSignInOptions(): OidcStatus | null {
  const [status, setStatus] = useState<OidcStatus | null>(null);
  useEffect(() => {
    const fallback: OidcStatus = { enabled: false, buttonText: null, ready: false, problem: null, passwordSignIn: true };
    api<OidcStatus>('/api/auth/oidc').then(setStatus, () => setStatus(fallback));
  }, []);
  return status;
}

/** "Sign in with …": a plain link, so the browser leaves for the provider; disabled with the reason when it cannot be used now. */
function SsoButton({ sso }: { sso: OidcStatus }) {
  if (!sso.ready) {
    return html`<div class="sso"><button type="button" disabled>${sso.buttonText}</button>
      <p class="banner warn sso-problem" role="status">Single sign-on cannot be used right now: ${sso.problem}</p></div>`;
  }
  return html`<div class="sso"><a class="button sso-start" href="api/auth/oidc/start">${sso.buttonText}</a></div>`;
}

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const setupNeeded = useSetupNeeded();
  const sso = useSignInOptions();
  const { error, busy, onSubmit } = useSubmit(async (f) => {
    await api<SessionAnswer>('/api/session', { method: 'POST', body: { email: f.get('email'), password: f.get('password') } });
    onSignedIn();
  });
  const passwordForm = html`<form class="password-signin" onSubmit=${onSubmit}>
    <label>E-mail <input name="email" type="email" autocomplete="username" required /></label>
    <label>Password <input name="password" type="password" autocomplete="current-password" required /></label>
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    <button disabled=${busy}>Sign in</button>
  </form>`;
  return html`<div class="card narrow signin" data-setup-needed=${String(setupNeeded)}>
    <h2>Sign in</h2>
    ${setupNeeded && html`<p class="banner warn setup-hint" role="status">No admin yet: open the setup link printed in the server's log.</p>`}
    ${sso?.enabled && html`<${SsoButton} sso=${sso} />`}
    ${sso?.passwordSignIn === false
      ? html`<details class="break-glass"><summary>Break-glass sign-in (instance admin)</summary>${passwordForm}</details>`
      : passwordForm}
  </div>`;
}

export function SetPassword({ token, onDone }: { token: string; onDone: () => void }) {
  const [done, setDone] = useState(false);
  const { error, busy, onSubmit } = useSubmit(async (f) => {
    if (f.get('password') !== f.get('again')) throw new Error('the two passwords differ');
    await api<PasswordSetAnswer>('/api/password', { method: 'POST', body: { token, password: f.get('password') } });
    setDone(true);
  });
  if (done) {
    return html`<div class="card narrow"><h2>Password set</h2><p>You can sign in now.</p>
      <button onClick=${onDone}>Go to sign-in</button></div>`;
  }
  return html`<form class="card narrow" onSubmit=${onSubmit}>
    <h2>Set your password</h2>
    <p class="muted">At least 10 characters. This link works once.</p>
    <label>New password <input name="password" type="password" autocomplete="new-password" minlength="10" required /></label>
    <label>Repeat it <input name="again" type="password" autocomplete="new-password" minlength="10" required /></label>
    ${error && html`<p class="failed" role="alert">${error}</p>`}
    <button disabled=${busy}>Set password</button>
  </form>`;
}
