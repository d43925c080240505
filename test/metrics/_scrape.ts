// Reading GET /metrics in the metrics tests: a scrape with the token, one sample's value, and
// `promtool check metrics` over an exposition.
// needs: promtool
import { spawnSync } from 'node:child_process';

export const METRICS_TOKEN = 'test-metrics-token-5f1c2a9e7b';

export async function scrape(url: string, token: string | null = METRICS_TOKEN, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${url}/metrics`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** The value of the sample `name{labels}` (labels in any order; exactly these), or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? '').split(/,(?=\w+=")/).filter(Boolean).sort().join(',');
    if (got === want) return Number(m[3]);
  }
  return undefined;
}

/** `promtool check metrics` over the text: its exit status and what it said. */
export function promtoolCheck(text: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
