// Admin pages: Preact + htm, no build-time JSX. Hash routes: #/runners (the landing page), #/runs,
// #/sessions, #/cost, #/integrations, #/terminal, #/schedules, #/settings, #/notifications (from the bell), #/set-password?token=…; any other route shows "not found".
// Anyone not signed in sees the sign-in form.
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, setCsrf } from './api.ts';
import { Cost } from './pages/cost.ts';
import { Integrations } from './pages/integrations.ts';
import { NotificationBell, Notifications } from './pages/notifications.ts';
import { Runners } from './pages/runners.ts';
import { Runs } from './pages/runs.ts';
import { Schedules } from './pages/schedules.ts';
import { Sessions } from './pages/sessions.ts';
import { Settings } from './pages/settings.ts';
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

const PAGES: Record<string, { title: string; view: () => unknown }> = {
  runners: { title: 'Runners', view: Runners },
  runs: { title: 'Skill runs', view: Runs },
  sessions: { title: 'Sessions', view: Sessions },
  cost: { title: 'Cost', view: Cost },
  integrations: { title: 'Integrations', view: Integrations },
  terminal: { title: 'Terminal', view: TerminalPage },
  schedules: { title: 'Schedules', view: Schedules },
  settings: { title: 'Settings', view: Settings },
};

/** The page a hash names: `#/runs?x=1` → runs; no hash (or `#/`) → runners, the landing page. */
export function route(hash: string): string {
  const name = /^#\/?([^?/]*)/.exec(hash)?.[1] ?? '';
  return name === '' ? 'runners' : name;
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
  else if (setPw) body = html`<${SetPassword} token=${setPw[1]} onDone=${() => (location.hash = '#/runners')} />`;
  else if (me === undefined) body = html`<p class="muted">Loading…</p>`;
  else if (me === null) body = html`<${SignIn} onSignedIn=${load} />`;
  else {
    const page = route(hash) === 'notifications' ? { title: 'Notifications', view: Notifications } : PAGES[route(hash)];
    body = page
      ? html`<h2>${page.title}</h2><${page.view} />`
      : html`<div class="card" role="alert"><h2>Not found</h2><p>There is no page at <code>${hash}</code>. <a href="#/runners">Go to Runners</a>.</p></div>`;
  }

  const signOut = async () => {
    await api('/api/session', { method: 'DELETE' }).catch(() => {});
    setCsrf(null);
    setMe(null);
  };
  return html`<header>
      <h1>svc</h1>
      ${me && html`<nav>${Object.entries(PAGES).map(([name, p]) => html`<a href=${`#/${name}`} aria-current=${route(hash) === name ? 'page' : undefined}>${p.title === 'Skill runs' ? 'Runs' : p.title}</a> `)}</nav>
        <span class="spacer"></span><${NotificationBell} /><span class="who">${me.user.email}</span>
        <button class="link" onClick=${signOut}>Sign out</button>`}
    </header>
    <main>${body}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
