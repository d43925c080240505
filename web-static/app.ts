// Admin pages: Preact + htm, no build-time JSX. One hash route per page (PAGES below), `#/fleet/<projectId>`
// with a parameter, `#/set-password?token=…` and `#/setup?token=…`; any other route shows "Not found". No hash lands on
// Getting started while an instance admin has no project yet, else on Projects. Navigation is
// role-aware: a page only instance admins can use is neither linked nor shown to anyone else.
// Anyone not signed in sees the sign-in form.
// Each page's code is its own chunk, loaded with import() the first time its route is opened
// (esbuild.config.mjs splits and hashes them); this entry holds only the frame, sign-in and the bell.
import './app.css';
import { html } from 'htm/preact';
import { render } from 'preact';
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, setCsrf } from './api.ts';
import type { Me } from './session.ts';
import { stopLive, useLiveRefetch } from './live.ts';
import { NotificationBell, Notifications } from './pages/notifications.ts';
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
type PageProps = { me: Me; param: string | null; reload: () => void };
// Pages take subsets of these props; each is rendered with all of them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type View = ComponentType<any>;
interface PageDef {
  title: string;
  /** The link's text when it differs from the heading; null = not in the navigation. */
  nav?: string | null;
  /** The page's component, from its own chunk (import() on first use). */
  load: () => Promise<View>;
  audience: Audience;
}

export const PAGES: Record<string, PageDef> = {
  start: { title: 'Getting started', nav: 'Start', load: () => import('./pages/start.ts').then((m) => m.GettingStarted), audience: 'instanceAdmin' },
  projects: { title: 'Projects', load: () => import('./pages/projects.ts').then((m) => m.Projects), audience: 'user' },
  fleet: { title: 'Fleet', load: () => import('./pages/fleet.ts').then((m) => m.Fleet), audience: 'user' },
  runners: { title: 'Runners', load: () => import('./pages/runners.ts').then((m) => m.Runners), audience: 'instanceAdmin' },
  runs: { title: 'Skill runs', nav: 'Runs', load: () => import('./pages/runs.ts').then((m) => m.Runs), audience: 'user' },
  sessions: { title: 'Sessions', load: () => import('./pages/sessions.ts').then((m) => m.Sessions), audience: 'user' },
  cost: { title: 'Cost', load: () => import('./pages/cost.ts').then((m) => m.Cost), audience: 'user' },
  integrations: { title: 'Integrations', load: () => import('./pages/integrations.ts').then((m) => m.Integrations), audience: 'projectAdmin' },
  schedules: { title: 'Schedules', load: () => import('./pages/schedules.ts').then((m) => m.Schedules), audience: 'user' },
  terminal: { title: 'Terminal', load: () => import('./pages/terminal.ts').then((m) => m.TerminalPage), audience: 'projectAdmin' },
  activity: { title: 'Activity', load: () => import('./pages/activity.ts').then((m) => m.Activity), audience: 'user' },
  audit: { title: 'Audit log', nav: 'Audit', load: () => import('./pages/audit.ts').then((m) => m.Audit), audience: 'instanceAdmin' },
  settings: { title: 'Settings', load: () => import('./pages/settings.ts').then((m) => m.Settings), audience: 'user' },
  // An action link (a notification's button): signed in first, then back here (docs/notifications.md).
  act: { title: 'Action', nav: null, load: () => import('./pages/act.ts').then((m) => m.Act), audience: 'user' },
  // The bell is in every page's header, so its list is in the entry already.
  notifications: { title: 'Notifications', nav: null, load: () => Promise.resolve(Notifications), audience: 'user' },
};

/** `#/setup?token=…`: the first admin, before anyone can sign in (functions/auth/setup.ts). */
const SETUP: PageDef = { title: 'Create the first admin', nav: null, load: () => import('./pages/setup.ts').then((m) => m.Setup), audience: 'user' };

/** Pages loaded so far: a page opened again renders at once. */
const loadedViews = new Map<PageDef, View>();

/** A page's component once its chunk is there ("Loading…" until then; a failed load says to reload). */
function PageView({ page, ...props }: PageProps & { page: PageDef }) {
  const [view, setView] = useState<View | null>(() => loadedViews.get(page) ?? null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    if (view) return;
    let mounted = true;
    page.load().then(
      (v) => (loadedViews.set(page, v), mounted && setView(() => v)),
      (e) => mounted && setFailed(e instanceof Error ? e.message : String(e)),
    );
    return () => void (mounted = false);
  }, [page]);
  // After a deploy the old build's chunks are gone: a tab opened before it needs the new index.html.
  if (failed) return html`<p class="banner failed" role="alert">This page could not be loaded (${failed}): reload the page to get the current version.</p>`;
  if (!view) return html`<p class="muted">Loading…</p>`;
  return html`<${view} ...${props} />`;
}

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
  const setup = /^#\/setup(?:\?token=([\w-]*))?$/.exec(hash);
  const { name: asked, param } = route(hash);
  const name = me && asked === '' ? landing(me) : asked;
  let body;
  if (down) body = html`<p class="banner failed" role="alert">The server cannot be reached: ${down}</p>`;
  else if (setPw) body = html`<${SetPassword} token=${setPw[1]} onDone=${() => (location.hash = '#/')} />`;
  else if (setup) body = html`<${PageView} page=${SETUP} token=${setup[1] ?? ''} onDone=${() => ((location.hash = '#/'), load())} />`;
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
      body = html`<h2>${page.title}</h2><${PageView} key=${name} page=${page} me=${me} param=${param} reload=${load} />`;
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
