// Admin pages: Preact + htm, no build-time JSX. One hash route per page (PAGES below), `#/fleet/<projectId>`
// with a parameter, and `#/set-password?token=…`; any other route shows "Not found". No hash lands on
// Getting started while an instance admin has no project yet, else on Projects. Navigation is
// role-aware: a page only instance admins can use is neither linked nor shown to anyone else.
// Anyone not signed in sees the sign-in form.
import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, setCsrf } from './api.ts';
import type { Me } from './session.ts';
import { Activity } from './pages/activity.ts';
import { Audit } from './pages/audit.ts';
import { stopLive, useLiveRefetch } from './live.ts';
import { Cost } from './pages/cost.ts';
import { Fleet } from './pages/fleet.ts';
import { Integrations } from './pages/integrations.ts';
import { NotificationBell, Notifications } from './pages/notifications.ts';
import { Projects } from './pages/projects.ts';
import { Runners } from './pages/runners.ts';
import { Runs } from './pages/runs.ts';
import { Schedules } from './pages/schedules.ts';
import { Sessions } from './pages/sessions.ts';
import { Settings } from './pages/settings.ts';
import { GettingStarted } from './pages/start.ts';
import { TerminalPage } from './pages/terminal.ts';
import { SetPassword, SignIn } from './pages/signin.ts';

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/** Who may open a page: everyone signed in, admins of at least one project, or instance admins only. */
type Audience = 'user' | 'projectAdmin' | 'instanceAdmin';
interface PageDef {
  title: string;
  /** The link's text when it differs from the heading; null = not in the navigation. */
  nav?: string | null;
  view: (props: { me: Me; param: string | null; reload: () => void }) => unknown;
  audience: Audience;
}

export const PAGES: Record<string, PageDef> = {
  start: { title: 'Getting started', nav: 'Start', view: GettingStarted, audience: 'instanceAdmin' },
  projects: { title: 'Projects', view: Projects, audience: 'user' },
  fleet: { title: 'Fleet', view: Fleet, audience: 'user' },
  runners: { title: 'Runners', view: Runners, audience: 'instanceAdmin' },
  runs: { title: 'Skill runs', nav: 'Runs', view: Runs, audience: 'user' },
  sessions: { title: 'Sessions', view: Sessions, audience: 'user' },
  cost: { title: 'Cost', view: Cost, audience: 'user' },
  integrations: { title: 'Integrations', view: Integrations, audience: 'projectAdmin' },
  schedules: { title: 'Schedules', view: Schedules, audience: 'user' },
  terminal: { title: 'Terminal', view: TerminalPage, audience: 'projectAdmin' },
  activity: { title: 'Activity', view: Activity, audience: 'user' },
  audit: { title: 'Audit log', nav: 'Audit', view: Audit, audience: 'instanceAdmin' },
  settings: { title: 'Settings', view: Settings, audience: 'user' },
  notifications: { title: 'Notifications', nav: null, view: Notifications, audience: 'user' },
};

/** The page a hash names and its parameter: `#/fleet/p1?x=1` → fleet, p1; no hash (or `#/`) → ''. */
export function route(hash: string): { name: string; param: string | null } {
  const m = /^#\/?([^?/]*)(?:\/([^?/]+))?/.exec(hash);
  return { name: m?.[1] ?? '', param: m?.[2] ? decodeURIComponent(m[2]) : null };
}

/** While signed in: a project created, deleted or re-membered changes /api/me's projects and roles, which every page reads. */
function LiveMe({ reload }: { reload: () => unknown }) {
  useLiveRefetch('project', reload);
  return null;
}

const allowed = (me: Me, page: PageDef) =>
  page.audience === 'user' || me.user.instanceAdmin || (page.audience === 'projectAdmin' && me.projects.some((p) => p.role === 'admin'));
/** Where no hash lands: Getting started until an instance admin has a project, else Projects. */
const landing = (me: Me) => (me.user.instanceAdmin && me.projects.length === 0 ? 'start' : 'projects');

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
  const { name: asked, param } = route(hash);
  const name = me && asked === '' ? landing(me) : asked;
  let body;
  if (down) body = html`<p class="banner failed" role="alert">The server cannot be reached: ${down}</p>`;
  else if (setPw) body = html`<${SetPassword} token=${setPw[1]} onDone=${() => (location.hash = '#/')} />`;
  else if (me === undefined) body = html`<p class="muted">Loading…</p>`;
  else if (me === null) body = html`<${SignIn} onSignedIn=${load} />`;
  else {
    const page = Object.hasOwn(PAGES, name) ? PAGES[name] : undefined;
    const home = landing(me);
    if (!page) {
      body = html`<div class="card" role="alert"><h2>Not found</h2><p>There is no page at <code>${hash}</code>. <a href=${`#/${home}`}>Go to ${PAGES[home].title}</a>.</p></div>`;
    } else if (!allowed(me, page)) {
      body = html`<div class="card" role="alert"><h2>${page.title}</h2><p>This page is for ${page.audience === 'projectAdmin' ? 'project admins' : 'instance admins'}. <a href=${`#/${home}`}>Go to ${PAGES[home].title}</a>.</p></div>`;
    } else {
      body = html`<h2>${page.title}</h2><${page.view} key=${name} me=${me} param=${param} reload=${load} />`;
    }
  }

  const signOut = async () => {
    await api('/api/session', { method: 'DELETE' }).catch(() => {});
    stopLive();
    setCsrf(null);
    setMe(null);
  };
  return html`<header>
      <h1>svc</h1>
      ${me &&
      html`<nav aria-label="Pages">${Object.entries(PAGES)
          .filter(([, p]) => p.nav !== null && allowed(me, p))
          .map(([n, p]) => html`<a href=${`#/${n}`} aria-current=${name === n ? 'page' : undefined}>${p.nav ?? p.title}</a>`)}</nav>
        <span class="spacer"></span><${LiveMe} reload=${load} /><${NotificationBell} /><span class="who">${me.user.email}</span>
        <button class="link" onClick=${signOut}>Sign out</button>`}
    </header>
    <main>${body}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
