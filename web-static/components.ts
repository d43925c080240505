// Small pieces every admin page shares (STYLE: one set of components): a command to copy, text whose
// `backticked` parts are code, field errors, money and token formats, and the SVG bar charts of the
// Cost page (no chart library: a few rects, drawn at the box's width in pixels).
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText, when } from './api.ts';

/** Put text on the clipboard; falls back to a hidden textarea where the Clipboard API is refused (http). */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {}
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  document.execCommand('copy');
  area.remove();
}

/** One command (or one secret) in its own block, with a Copy button that copies exactly that text. */
export function CopyBlock({ text, label }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await copyText(text);
    setCopied(true);
    setTimeout(() => setCopied(false), 2000);
  };
  return html`<div class="copyblock">
    ${label && html`<div class="muted">${label}</div>`}
    <div class="copyrow"><pre class="copytext">${text}</pre>
      <button type="button" class="secondary" onClick=${copy} aria-label=${`Copy ${label ?? 'text'}`}>${copied ? 'Copied' : 'Copy'}</button></div>
  </div>`;
}

/** Text in which `…` spans are shown as code (remedies and help texts come from the API as plain text). */
export function RichText({ text }: { text: string }) {
  const parts = text.split(/`([^`]+)`/);
  return html`${parts.map((p, i) => (i % 2 ? html`<code>${p}</code>` : p))}`;
}

/**
 * The API's field errors (a 400's `fields`) that belong to one input, shown next to it: `name` itself,
 * and `name.<n>` of a one-per-line input as "line n+1".
 */
export function FieldError({ fields, name }: { fields: Record<string, string> | null | undefined; name: string }) {
  const mine = Object.entries(fields ?? {}).filter(([k]) => k === name || k.startsWith(`${name}.`));
  if (mine.length === 0) return null;
  const where = (k: string) => {
    const rest = k.slice(name.length + 1);
    return k === name ? '' : /^\d+$/.test(rest) ? `line ${Number(rest) + 1}: ` : `${rest}: `;
  };
  return html`<div class="failed field-error" data-field=${name}>${mine.map(([k, text]) => html`<div>${where(k)}${text}</div>`)}</div>`;
}

/**
 * A form's submit with the API's answer: `fields` (the 400's field errors, shown beside each input with
 * FieldError), `error` (anything else, for a banner), `busy` while it runs.
 */
export function useAction() {
  const [error, setError] = useState<string | null>(null);
  const [fields, setFields] = useState<Record<string, string> | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    try {
      const out = await work();
      setError(null);
      setFields(null);
      return out;
    } catch (e) {
      const f = e instanceof ApiError && e.fields && Object.keys(e.fields).length ? e.fields : null;
      setFields(f);
      setError(f ? null : errorText(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  const reset = () => (setError(null), setFields(null));
  return { error, fields, busy, run, reset };
}

/** A banner for an error (role=alert), or nothing. */
export function Alert({ error }: { error: string | null | undefined }) {
  return error ? html`<p class="banner failed" role="alert">${error}</p>` : null;
}

/** A modal dialog (native <dialog>): Escape and the Close button call onClose; focus moves into it. */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return html`<dialog ref=${ref} aria-label=${title} onCancel=${(e: Event) => (e.preventDefault(), onClose())}>
    <h3>${title}</h3>
    ${children}
  </dialog>`;
}

/**
 * The pairing code and the exact commands to paste on the agent machine (docs/runner.md, "Install and
 * pair"), each in its own block with a Copy button: install, pair, run as a service.
 */
export function PairingCommands({ name, code, expiresAt }: { name: string; code: string; expiresAt: string }) {
  const base = location.origin + location.pathname.replace(/\/[^/]*$/, '');
  // An expired code is useless: its commands are taken off the page when it expires.
  const [expired, setExpired] = useState(() => Date.parse(expiresAt) <= Date.now());
  useEffect(() => {
    setExpired(Date.parse(expiresAt) <= Date.now());
    const t = setTimeout(() => setExpired(true), Math.min(Math.max(0, Date.parse(expiresAt) - Date.now()), 2 ** 31 - 1));
    return () => clearTimeout(t);
  }, [expiresAt]);
  if (expired) {
    return html`<div class="card notice pairing" role="status" data-expired="true">The pairing code for <strong>${name}</strong> expired ${when(expiresAt)}.
      Make a new one with <strong>New pairing code</strong> on its row (Runners).</div>`;
  }
  return html`<div class="card notice pairing" role="status">
    Pairing code for <strong>${name}</strong>: <code class="code">${code}</code> (valid until ${when(expiresAt)}, single use). On the agent machine, run these one after the other:
    <${CopyBlock} label="1. Install the runner (needs Node.js 20 or newer; verifies the download's SHA-256)" text=${`curl -fsSL ${base}/install-runner.sh | sh`} />
    <${CopyBlock} label="2. Pair it with this server" text=${`~/.local/bin/svc-runner pair --server ${base} --code ${code}`} />
    <${CopyBlock} label="3. Run it as a service (prints the command that starts it)" text="~/.local/bin/svc-runner install-service" />
  </div>`;
}

/** A status word as a badge: ok/online/done green, failed/offline red, running/warn amber, else grey. */
export function Badge({ text, tone }: { text: string; tone?: 'ok' | 'failed' | 'warn' | 'muted' }) {
  const t = tone ?? (/^(ok|online|done|set|active|running)$/.test(text) ? 'ok' : /^(failed|offline|revoked|broken|disabled)$/.test(text) ? 'failed' : 'muted');
  return html`<span class=${`badge ${t}`}>${text}</span>`;
}

// ---- money, tokens and the hash's query (Sessions and Cost pages) ----

/** US dollars: 4 decimals under $1 (single requests cost fractions of a cent), else 2. */
export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return `$${n.toLocaleString('en-US', { minimumFractionDigits: Math.abs(n) < 1 ? 4 : 2, maximumFractionDigits: Math.abs(n) < 1 ? 4 : 2 })}`;
}

/** A token count with thousands separators. */
export const count = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

/** The query part of the hash (`#/page?a=1` → a=1), read on each render: App re-renders on hashchange. */
export function hashQuery(): URLSearchParams {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

/** The hash of `page` with these parameters (empty ones left out). */
export function hashOf(page: string, params: Record<string, string | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return `#/${page}${s ? `?${s}` : ''}`;
}

// ---- charts: hand-written SVG, drawn in pixels at the width of their box so text stays readable ----

export interface Bar {
  key: string;
  /** Shown on the axis (a day as MM-DD, a project's name). */
  label: string;
  value: number;
  /** The bar's tooltip and accessible text: the full label and its figures. */
  title: string;
  /** Written beside a horizontal bar instead of the formatted value (e.g. "unpriced"). */
  text?: string;
}

function useWidth(initial: number) {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(initial);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, Math.floor(el.clientWidth)));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width] as const;
}

interface ChartProps {
  /** Element id prefix for the title and description. */
  id: string;
  title: string;
  /** What the chart shows, said in words (read by screen readers instead of the bars). */
  desc: string;
  bars: Bar[];
  format: (n: number) => string;
}

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, Math.max(1, max - 1))}…` : s);

/** Vertical bars along a time axis (cost by day); every bar has a tooltip, some have axis labels. */
export function ColumnChart({ id, title, desc, bars, format }: ChartProps) {
  const [ref, w] = useWidth(600);
  const h = 200;
  const [top, bottom, left, right] = [18, 22, 4, 4];
  const plotW = w - left - right;
  const plotH = h - top - bottom;
  const max = Math.max(...bars.map((b) => b.value), 0) || 1;
  const slot = plotW / Math.max(1, bars.length);
  const every = Math.max(1, Math.ceil(bars.length / Math.max(1, Math.floor(plotW / 56))));
  return html`<div class="chart" ref=${ref}>
    <svg width=${w} height=${h} viewBox=${`0 0 ${w} ${h}`} role="img" aria-labelledby=${`${id}-title ${id}-desc`} data-chart=${id}>
      <title id=${`${id}-title`}>${title}</title>
      <desc id=${`${id}-desc`}>${desc}</desc>
      <line class="grid" x1=${left} x2=${w - right} y1=${top} y2=${top} />
      <text class="axis" x=${left} y=${top - 5}>${format(max)}</text>
      <line class="base" x1=${left} x2=${w - right} y1=${top + plotH} y2=${top + plotH} />
      ${bars.map((b, i) => {
        const bh = b.value > 0 ? Math.max(1, (b.value / max) * plotH) : 0;
        const x = left + i * slot + slot * 0.1;
        const mid = x + slot * 0.4;
        // Labels centred under their bar, but never past the edges of the drawing.
        const anchor = mid < 24 ? 'start' : mid > w - 24 ? 'end' : 'middle';
        return html`<g class="bar" data-key=${b.key} data-value=${b.value}>
          <rect x=${x} y=${top + plotH - bh} width=${Math.max(1, slot * 0.8)} height=${bh}><title>${b.title}</title></rect>
          ${i % every === 0 && html`<text class="axis" x=${anchor === 'start' ? left : anchor === 'end' ? w - right : mid} y=${h - 6} text-anchor=${anchor}>${b.label}</text>`}
        </g>`;
      })}
    </svg>
  </div>`;
}

/** Horizontal bars, largest first (cost by project, by model); the value is written beside each bar. */
export function BarChart({ id, title, desc, bars, format }: ChartProps) {
  const [ref, w] = useWidth(600);
  const row = 26;
  const h = Math.max(1, bars.length) * row + 4;
  const labelW = Math.min(200, Math.floor(w * 0.36));
  const valueW = 84;
  const barMax = Math.max(10, w - labelW - valueW - 12);
  const max = Math.max(...bars.map((b) => b.value), 0) || 1;
  return html`<div class="chart" ref=${ref}>
    <svg width=${w} height=${h} viewBox=${`0 0 ${w} ${h}`} role="img" aria-labelledby=${`${id}-title ${id}-desc`} data-chart=${id}>
      <title id=${`${id}-title`}>${title}</title>
      <desc id=${`${id}-desc`}>${desc}</desc>
      ${bars.map((b, i) => {
        const y = i * row + 2;
        const bw = b.value > 0 ? Math.max(1, (b.value / max) * barMax) : 0;
        return html`<g class="bar" data-key=${b.key} data-value=${b.value}>
          <title>${b.title}</title>
          <text class="label" x=${labelW} y=${y + row / 2 + 4} text-anchor="end">${clip(b.label, Math.floor(labelW / 7))}</text>
          <rect x=${labelW + 6} y=${y + 4} width=${bw} height=${row - 8} />
          <text class="value" x=${labelW + 10 + bw} y=${y + row / 2 + 4}>${b.text ?? format(b.value)}</text>
        </g>`;
      })}
    </svg>
  </div>`;
}
