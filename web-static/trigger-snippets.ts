// What a caller needs to call an inbound trigger, as text to copy (docs/triggers.md): a sample payload
// made from the trigger's allowed paths, a shell script (openssl + curl) that signs and sends it, and a
// ~15-line TypeScript/Node sender (docs/examples/sign-trigger.ts written inline). The admin page fills
// them with the real URL and secret; docs/triggers.md shows them filled with DOC_EXAMPLE, and
// test/triggers/docs.test.ts checks that the page shows exactly what this module makes, so the two
// cannot drift. Pure (no DOM): the page, the docs test and the browser test import it.
import { compileValuePattern, lookup } from '../protocol/placeholders.ts';

/** What docs/triggers.md fills the snippets with. */
export const DOC_EXAMPLE = { url: 'https://svc.example.com/hooks/<publicId>', secret: '<secret>', payload: { ref: 'main' } } as const;

/** Values tried, in order, for each allowed path of a sample payload: the first the value pattern accepts. */
const SAMPLE_VALUES = ['example', 'main', '42', 'x', '0', ''];

/**
 * A payload that fills every allowed path with a value the trigger's value pattern accepts, so a sample
 * call is accepted (202) rather than refused. A numeric segment makes an array; a path that runs into
 * a value another path already set is left out.
 */
export function samplePayload(allowedPaths: readonly string[], valuePattern: string): Record<string, unknown> {
  const pattern = compileValuePattern(valuePattern);
  const value = SAMPLE_VALUES.find((v) => pattern?.test(v)) ?? SAMPLE_VALUES[0];
  const root: Record<string, unknown> = {};
  for (const path of allowedPaths) {
    const segments = path.split('.');
    let node: Record<string, unknown> | unknown[] = root;
    for (let i = 0; i < segments.length; i++) {
      const key = segments[i];
      const at = Array.isArray(node) ? Number(key) : key;
      if (Array.isArray(node) && !/^\d+$/.test(key)) break; // an object key on an array: cannot be both
      const last = i === segments.length - 1;
      const here = (node as Record<string | number, unknown>)[at];
      if (last) {
        if (here === undefined) (node as Record<string | number, unknown>)[at] = value;
        break;
      }
      if (here === undefined) (node as Record<string | number, unknown>)[at] = /^\d+$/.test(segments[i + 1]) ? [] : {};
      const next = (node as Record<string | number, unknown>)[at];
      if (next === null || typeof next !== 'object') break; // another path set a value here
      node = next as Record<string, unknown> | unknown[];
    }
  }
  // Holes of sparse arrays become nulls in JSON; fill them so the payload reads like one a caller sends.
  return JSON.parse(JSON.stringify(root, (_k, v) => (Array.isArray(v) ? Array.from(v, (x) => x ?? value) : v)));
}

/** Is every allowed path of the sample present (a quick self-check used by the tests)? */
export const coversPaths = (payload: unknown, allowedPaths: readonly string[]) => allowedPaths.every((p) => lookup(payload, p).found);

/** A word for sh in single quotes (a quote inside becomes '\''). */
export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A POSIX shell script: sign `payload` for the trigger at `url` and send it with curl; prints the answer
 * and `HTTP <status>` (202 when accepted). Needs openssl and curl; runs in sh, bash, zsh, and with `sh -c`.
 */
export function curlScript(url: string, secret: string, payload: unknown): string {
  return [
    `URL=${shellQuote(url)} SECRET=${shellQuote(secret)} BODY=${shellQuote(JSON.stringify(payload))}`,
    `TS=$(date +%s) ID=$(openssl rand -hex 16)`,
    `SIG=$(printf '%s' "$TS.$ID.$BODY" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //')`,
    `curl -sS -w '\\nHTTP %{http_code}\\n' -X POST "$URL" -H 'content-type: application/json' -H "X-Svc-Timestamp: $TS" -H "X-Svc-Delivery: $ID" -H "X-Svc-Signature: sha256=$SIG" --data-binary "$BODY"`,
  ].join('\n');
}

/**
 * A TypeScript file for Node 18+ that signs `payload` for the trigger at `url` and sends it; prints the
 * status and answer, and exits 1 unless 202. Save it as send-trigger.ts and run `npx tsx send-trigger.ts`
 * (or `node --experimental-strip-types send-trigger.ts` on Node 22.6+). No top-level await, so it runs
 * as CommonJS or as a module.
 */
export function nodeSender(url: string, secret: string, payload: unknown): string {
  return `// Sign and send one call to an svc inbound trigger (docs/examples/sign-trigger.ts, inline).
import { createHmac, randomUUID } from 'node:crypto';

const url = ${JSON.stringify(url)};
const secret = process.env.SVC_TRIGGER_SECRET ?? ${JSON.stringify(secret)};
const body = JSON.stringify(${JSON.stringify(payload)}); // sign exactly the bytes you send
const timestamp = String(Math.floor(Date.now() / 1000));
const delivery = randomUUID(); // your id for this delivery: reuse it when you retry it
const hex = createHmac('sha256', Buffer.from(secret, 'utf8')).update(\`\${timestamp}.\${delivery}.\`).update(body).digest('hex');
const headers = { 'content-type': 'application/json', 'X-Svc-Timestamp': timestamp, 'X-Svc-Delivery': delivery, 'X-Svc-Signature': \`sha256=\${hex}\` };

fetch(url, { method: 'POST', headers, body }).then(async (res) => {
  console.log(res.status, await res.text()); // 202 {"deliveryId":"…","status":"accepted"}
  if (res.status !== 202) process.exitCode = 1;
});
`;
}
