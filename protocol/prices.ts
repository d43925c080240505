// Model prices and the cost of one request (docs/cost.md). The runner's `usage` command and the server
// compute cost with the same function; the server seeds its price table from DEFAULT_PRICES once
// (spec: the seed adds the price table only when none exists), after which admins edit it.
//
// Prices are USD per million tokens. The formula is ccusage's (so our figures and its agree):
//   input×input + output×output + cache5m×cacheWrite5m + cache1h×cacheWrite1h + cacheRead×cacheRead,
// each term tiered on its own: the first 200,000 tokens of that term at the base price, the rest at the
// `above200k` price when the model has one; times `fastMultiplier` when the request ran in fast mode.

export interface ModelPrice {
  model: string;
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
  /** Prices of each term's tokens beyond 200,000 in one request, where the model has them. */
  above200k?: Partial<Record<'input' | 'output' | 'cacheWrite5m' | 'cacheWrite1h' | 'cacheRead', number>>;
  /** Multiplier for fast/priority requests; 2 when the model has none of its own. */
  fastMultiplier?: number;
}

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  cacheReadTokens: number;
}

const TIER = 200_000;
const claude = (model: string, input: number, output: number): ModelPrice => ({ model, input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 2, cacheRead: input * 0.1 });
const openai = (model: string, input: number, cached: number, output: number): ModelPrice => ({ model, input, output, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: cached });

/** The seed (../shared/reference/agent-formats.md §4). */
export const DEFAULT_PRICES: ModelPrice[] = [
  claude('claude-opus-4-6', 5, 25),
  claude('claude-opus-4-5', 5, 25),
  claude('claude-opus-4-1', 15, 75),
  claude('claude-opus-4', 15, 75),
  claude('claude-sonnet-4-6', 3, 15),
  claude('claude-sonnet-4-5', 3, 15),
  claude('claude-sonnet-4', 3, 15),
  claude('claude-haiku-4-5', 1, 5),
  claude('claude-3-5-haiku', 0.8, 4),
  openai('gpt-5', 1.25, 0.125, 10),
  openai('gpt-5-codex', 1.25, 0.125, 10),
  openai('gpt-5.1', 1.25, 0.125, 10),
  openai('gpt-5.1-codex', 1.25, 0.125, 10),
  openai('gpt-5.1-codex-max', 1.25, 0.125, 10),
  openai('gpt-5-mini', 0.25, 0.025, 2),
];

/** A model id without a provider prefix (`anthropic/`, `bedrock/…/`) or a `-YYYYMMDD` date suffix. */
export function baseModel(model: string): string {
  return model.replace(/^.*\//, '').replace(/-\d{8}$/, '');
}

/** The price of a model: exact id first, then without prefix and date; null when unknown (never $0). */
export function findPrice(model: string, prices: readonly ModelPrice[]): ModelPrice | null {
  const exact = prices.find((p) => p.model === model);
  if (exact) return exact;
  const base = baseModel(model);
  return prices.find((p) => p.model === base || baseModel(p.model) === base) ?? null;
}

function term(tokens: number, perMillion: number, above: number | undefined): number {
  if (tokens <= 0) return 0;
  if (above === undefined || tokens <= TIER) return (tokens * perMillion) / 1e6;
  return (TIER * perMillion + (tokens - TIER) * above) / 1e6;
}

/** USD for one request's tokens at a price. */
export function costUsd(t: TokenCounts, p: ModelPrice, speed?: 'standard' | 'fast' | null): number {
  const a = p.above200k ?? {};
  const sum =
    term(t.inputTokens, p.input, a.input) +
    term(t.outputTokens, p.output, a.output) +
    term(t.cacheWrite5mTokens, p.cacheWrite5m, a.cacheWrite5m) +
    term(t.cacheWrite1hTokens, p.cacheWrite1h, a.cacheWrite1h) +
    term(t.cacheReadTokens, p.cacheRead, a.cacheRead);
  return speed === 'fast' ? sum * (p.fastMultiplier ?? 2) : sum;
}
