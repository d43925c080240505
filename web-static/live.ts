// The pages' live connection (GET /api/live; protocol/live.ts): ONE WebSocket for the whole app, opened
// while some page listens and closed a little after the last one leaves. It reconnects with backoff
// (1 s doubling to 30 s, jittered). When the server's `ready` arrives, every listener that listened while
// the connection was not ready (a page that mounted before it, or any page during a gap) is told
// `{type: 'reconnected'}` so it re-fetches what it shows: notices sent before `ready` are lost, and a page's
// first read may be older than the moment its notices started.
// A notice is only a hint: the page re-fetches through the API, which checks rights again.
//   useLive(filter, onNotice)  filter: a type, a list of types, {types?, projectId?}, or a predicate
import { useEffect, useRef } from 'preact/hooks';
import { LIVE_CLOSE } from '../protocol/live.ts';
import type { LiveNotice, LiveNoticeType } from '../protocol/live.ts';

export type { LiveNotice, LiveNoticeType };
export type LiveSignal = LiveNotice | { type: 'reconnected' };
export type LiveFilter = LiveNoticeType | LiveNoticeType[] | { types?: LiveNoticeType[]; projectId?: string } | ((n: LiveNotice) => boolean);

interface Listener {
  matches: (n: LiveNotice) => boolean;
  onNotice: (n: LiveSignal) => void;
  /** Listened while no `ready` connection was there: it may have missed notices, so re-fetch at the next `ready`. */
  missed: boolean;
}

const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;
/** Page switches unmount one page and mount the next: keep the socket over that moment. */
const IDLE_CLOSE_MS = 5000;

const listeners = new Set<Listener>();
let socket: WebSocket | null = null;
let attempt = 0;
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let idleTimer: ReturnType<typeof setTimeout> | undefined;
/** The server's `ready` reached the open socket: notices flow from here on. */
let ready = false;
/** The server said "not signed in": wait for a new listener (the pages after sign-in) before trying again. */
let signedOut = false;

/** The delay before reconnect attempt `n` (0-based): 1 s, 2 s, 4 s … 30 s, each ±20 % at random. */
export function backoffDelay(n: number, random: () => number = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(n, 10));
  return Math.round(base * (0.8 + 0.4 * random()));
}

function compile(filter: LiveFilter): (n: LiveNotice) => boolean {
  if (typeof filter === 'function') return filter;
  if (typeof filter === 'string') return (n) => n.type === filter;
  if (Array.isArray(filter)) return (n) => filter.includes(n.type);
  return (n) => (!filter.types || filter.types.includes(n.type)) && (!filter.projectId || ('projectId' in n && n.projectId === filter.projectId));
}

function dispatch(n: LiveSignal): void {
  for (const l of [...listeners]) {
    if (n.type === 'reconnected' ? !l.missed : !l.matches(n)) continue;
    if (n.type === 'reconnected') l.missed = false;
    try {
      l.onNotice(n);
    } catch (err) {
      console.warn('live listener failed', err);
    }
  }
}

function open(): void {
  if (socket || signedOut || listeners.size === 0) return;
  clearTimeout(retryTimer);
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/live`);
  socket = ws;
  ws.onmessage = (e) => {
    let n: LiveNotice;
    try {
      n = JSON.parse(String(e.data));
    } catch {
      return;
    }
    if (n.type === 'ready') {
      attempt = 0;
      ready = true;
      dispatch({ type: 'reconnected' });
      return;
    }
    if (n.type !== 'error') dispatch(n);
  };
  ws.onclose = (e) => {
    if (socket !== ws) return;
    socket = null;
    lost();
    if (e.code === LIVE_CLOSE.unauthorized) signedOut = true;
    if (signedOut || listeners.size === 0) return;
    retryTimer = setTimeout(open, backoffDelay(attempt++));
  };
}

/** No `ready` connection any more: every listener may miss notices until the next one. */
function lost(): void {
  ready = false;
  for (const l of listeners) l.missed = true;
}

function close(): void {
  clearTimeout(retryTimer);
  const ws = socket;
  socket = null;
  lost();
  ws?.close(1000, 'no page listens');
}

/** Listen for notices while mounted. `onNotice` may change between renders; the latest one is called. */
export function useLive(filter: LiveFilter, onNotice: (n: LiveSignal) => void, deps: unknown[] = []): void {
  const latest = useRef(onNotice);
  latest.current = onNotice;
  useEffect(() => {
    const l: Listener = { matches: compile(filter), onNotice: (n) => latest.current(n), missed: !ready };
    listeners.add(l);
    clearTimeout(idleTimer);
    signedOut = false;
    open();
    return () => {
      listeners.delete(l);
      if (listeners.size === 0) idleTimer = setTimeout(close, IDLE_CLOSE_MS);
    };
  }, deps);
}

/** After sign-out: drop the connection now (the server closes it too; this avoids a reconnect attempt). */
export function stopLive(): void {
  signedOut = true;
  close();
}

/**
 * The common case: call `refetch` when a matching notice arrives or after a reconnect, at most once a
 * second (a burst of notices is one re-fetch, at its end).
 */
export function useLiveRefetch(filter: LiveFilter, refetch: () => unknown, deps: unknown[] = []): void {
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const last = useRef(0);
  useEffect(() => () => clearTimeout(timer.current), []);
  useLive(
    filter,
    () => {
      if (timer.current !== undefined) return;
      const wait = Math.max(0, last.current + 1000 - Date.now());
      timer.current = setTimeout(() => {
        timer.current = undefined;
        last.current = Date.now();
        void refetch();
      }, wait);
    },
    deps,
  );
}
