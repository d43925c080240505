// Admin pages: Preact + htm, no build-time JSX. Hash routes: #/runners, #/runs, #/integrations, #/terminal, #/schedules, #/set-password?token=…;
// anyone not signed in sees the sign-in form.
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, setCsrf } from './api.ts';
import { Integrations } from './pages/integrations.ts';
import { Runners } from './pages/runners.ts';
import { Runs } from './pages/runs.ts';
import { Schedules } from './pages/schedules.ts';
import { TerminalPage } from './pages/terminal.ts';
import { SetPassword, SignIn } from './pages/signin.ts';

interface Me {
  user: { email: string; name: string; instanceAdmin: boolean };
  csrfToken: string | null;
}

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function App() {
  const hash = useHash();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [down, setDown] = useState<string | null>(null);
  const load = () =>
    api<Me>('/api/me')
      .then((m) => (setCsrf(m.csrfToken), setDown(null), setMe(m)))
      .catch((e) => (e instanceof ApiError && e.status === 401 ? setMe(null) : setDown(e.message)));
  useEffect(() => void load(), []);

  const setPw = /^#\/set-password\?token=([\w-]+)/.exec(hash);
  let body;
  if (down) body = html`<p class="failed" role="alert">The server cannot be reached: ${down}</p>`;
  else if (setPw) body = html`<${SetPassword} token=${setPw[1]} onDone=${() => (location.hash = '#/schedules')} />`;
  else if (me === undefined) body = html`<p class="muted">Loading…</p>`;
  else if (me === null) body = html`<${SignIn} onSignedIn=${load} />`;
  else if (hash.startsWith('#/runners')) body = html`<h2>Runners</h2><${Runners} />`;
  else if (hash.startsWith('#/runs')) body = html`<h2>Skill runs</h2><${Runs} />`;
  else if (hash.startsWith('#/terminal')) body = html`<h2>Terminal</h2><${TerminalPage} />`;
  else if (hash.startsWith('#/integrations')) body = html`<h2>Integrations</h2><${Integrations} />`;
  else body = html`<h2>Schedules</h2><${Schedules} />`;

  const signOut = async () => {
    await api('/api/session', { method: 'DELETE' }).catch(() => {});
    setCsrf(null);
    setMe(null);
  };
  return html`<header>
      <h1>svc</h1>
      ${me && html`<nav><a href="#/runners">Runners</a> <a href="#/runs">Runs</a> <a href="#/integrations">Integrations</a> <a href="#/terminal">Terminal</a> <a href="#/schedules">Schedules</a></nav>
        <span class="spacer"></span><span class="who">${me.user.email}</span>
        <button class="link" onClick=${signOut}>Sign out</button>`}
    </header>
    <main>${body}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
