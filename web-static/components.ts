// Small pieces every admin page shares (STYLE: one set of components): a command to copy, and text
// whose `backticked` parts are code.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';

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
