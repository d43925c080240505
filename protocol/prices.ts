// Model prices and the cost of one request (docs/cost.md). The runner's `usage` command and the server
// compute cost with the same function; the server seeds its price table from DEFAULT_PRICES once
// (spec: the seed adds the price table only when none exists), after which admins edit it.
//
// Prices are USD per million tokens. The formula is ccusage's (so our figures and its agree):
//   input×input + output×output + cache5m×cacheWrite5m + cache1h×cacheWrite1h + cacheRead×cacheRead,
// each term tiered on its own: the first 200,000 tokens of that term at the base price, the rest at the
// `above200k` price when the model has one; times `fastMultiplier` when the request ran in fast mode.
// Cache write 1 h is its own price (ccusage: 2× input, and 2× the above-200k input price beyond 200k).

export interface ModelPrice {
  model: string;
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
  /** Prices of each term's tokens beyond 200,000 in one request, where the model has them. */
  above200k?: Partial<Record<'input' | 'output' | 'cacheWrite5m' | 'cacheWrite1h' | 'cacheRead', number>>;
  /**
   * A per-request long-context price (OpenAI's rule for gpt-5.4 and later, as ccusage applies it): when the
   * request's whole input (uncached + cache reads + cache writes) is above `above` tokens, every term of the
   * request is priced at these prices instead, without per-term tiering.
   */
  longContext?: { above: number; input: number; output: number; cacheWrite5m: number; cacheWrite1h: number; cacheRead: number };
  /** Multiplier for fast/priority requests; 1 (no surcharge) when the model has none, as in ccusage. */
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
/** Anthropic's multipliers: 5-minute cache write 1.25× input, 1-hour 2× input, cache read 0.1× input. */
const claude = (model: string, input: number, output: number, extra: Partial<ModelPrice> = {}): ModelPrice => ({
  model, input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 2, cacheRead: input * 0.1, ...extra,
});
/** Sonnet 4 / 4.5 long context: every term at 2× input (cache write 1 h: 2× the long input), output 1.5×. */
const longContext = (input: number, output: number): ModelPrice['above200k'] => ({
  input: input * 2, output: output * 1.5, cacheWrite5m: input * 2.5, cacheWrite1h: input * 4, cacheRead: input * 0.2,
});
const openai = (model: string, input: number, cached: number, output: number, extra: Partial<ModelPrice> = {}): ModelPrice => ({
  model, input, output, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: cached, ...extra,
});
/** Above the threshold: input and cached input 2×, output 1.5×. */
const openaiLong = (above: number, input: number, cached: number, output: number): ModelPrice['longContext'] => ({
  above, input: input * 2, output: output * 1.5, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: cached * 2,
});

/**
 * Google (Gemini API, standard tier): cache reads at a tenth of input, no cache write; thinking tokens are
 * output. The Pro models have a long-context price: a request whose prompt (uncached + cached + tool) is over
 * 200,000 tokens is priced at 2× input and cached input and 1.5× output for every term (Google's rule; ccusage
 * applies it per request the same way: measured with scripts/probe-ccusage-prices.mjs --gemini).
 */
const google = (model: string, input: number, cached: number, output: number, long = false): ModelPrice => ({
  model, input, output, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: cached,
  ...(long ? { longContext: { above: 200_000, input: input * 2, output: output * 1.5, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: cached * 2 } } : {}),
});

/**
 * The seed: the prices ccusage 20.0.20 uses with `--offline` (its embedded LiteLLM snapshot, built-in table and
 * fast-multiplier overrides), measured with scripts/probe-ccusage-prices.mjs, so that `svc-runner usage` and
 * ccusage agree (docs/cost.md). Models ccusage prices oddly by fuzzy matching (o3, o4-mini) or not at all
 * (codex-mini-latest) are left out: unknown, flagged, never $0.
 */
export const DEFAULT_PRICES: ModelPrice[] = [
  claude('claude-opus-4-8', 5, 25, { fastMultiplier: 2 }),
  claude('claude-opus-4-7', 5, 25, { fastMultiplier: 6 }),
  claude('claude-opus-4-6', 5, 25, { fastMultiplier: 6 }),
  claude('claude-opus-4-5', 5, 25),
  claude('claude-opus-4-1', 15, 75),
  claude('claude-opus-4', 15, 75),
  claude('claude-sonnet-4-6', 3, 15),
  claude('claude-sonnet-4-5', 3, 15, { above200k: longContext(3, 15) }),
  claude('claude-sonnet-4', 3, 15, { above200k: longContext(3, 15) }),
  claude('claude-haiku-4-5', 1, 5),
  claude('claude-3-7-sonnet', 3, 15),
  claude('claude-3-5-sonnet', 3, 15),
  claude('claude-3-5-haiku', 0.8, 4),
  claude('claude-3-opus', 15, 75),
  { model: 'claude-3-haiku', input: 0.25, output: 1.25, cacheWrite5m: 0.3, cacheWrite1h: 0.5, cacheRead: 0.03 },
  openai('gpt-5', 1.25, 0.125, 10),
  openai('gpt-5-codex', 1.25, 0.125, 10),
  openai('gpt-5-mini', 0.25, 0.025, 2),
  openai('gpt-5-nano', 0.05, 0.005, 0.4),
  openai('gpt-5.1', 1.25, 0.125, 10),
  openai('gpt-5.1-codex', 1.25, 0.125, 10),
  openai('gpt-5.1-codex-max', 1.25, 0.125, 10),
  openai('gpt-5.1-codex-mini', 0.25, 0.025, 2),
  openai('gpt-5.2', 1.75, 0.175, 14),
  openai('gpt-5.2-codex', 1.75, 0.175, 14),
  openai('gpt-5.3-codex', 1.75, 0.175, 14, { fastMultiplier: 2 }),
  openai('gpt-5.4', 2.5, 0.25, 15, { longContext: openaiLong(272_000, 2.5, 0.25, 15), fastMultiplier: 2 }),
  openai('gpt-5.5', 5, 0.5, 30, { longContext: openaiLong(272_000, 5, 0.5, 30), fastMultiplier: 2.5 }),
  // Gemini CLI's models (gemini-cli packages/core/src/config/models.ts). Source: ccusage 20.0.20 --offline
  // (LiteLLM's snapshot), which matches https://ai.google.dev/gemini-api/docs/pricing for the 2.5 models
  // (reference agent-formats-more.md §6; the 3.x previews are LiteLLM's figures only).
  google('gemini-2.5-pro', 1.25, 0.125, 10, true),
  google('gemini-2.5-flash', 0.3, 0.03, 2.5),
  google('gemini-2.5-flash-lite', 0.1, 0.01, 0.4),
  google('gemini-3-pro-preview', 2, 0.2, 12, true),
  google('gemini-3.1-pro-preview', 2, 0.2, 12, true),
  google('gemini-3-flash-preview', 0.5, 0.05, 3),
  google('gemini-3.5-flash', 1.5, 0.15, 9),
  google('gemini-3.1-flash-lite', 0.25, 0.025, 1.5),
  // OpenCode's models beyond the Claude, GPT and Gemini ones above (OpenCode Zen's and its providers' coding
  // models; runner/runtimes/opencode). Source: ccusage 20.0.20 --offline (LiteLLM's snapshot), measured per term
  // with `ccusage opencode session --json --offline` on one-term messages (docs/cost.md "OpenCode"); OpenCode's
  // cache write is the 5-minute price. Only below 200,000 tokens per term was measured.
  { model: 'glm-4.6', input: 0.6, output: 2.2, cacheWrite5m: 0, cacheWrite1h: 0, cacheRead: 0.11 },
  { model: 'kimi-k2-thinking', input: 0.6, output: 2.5, cacheWrite5m: 0.75, cacheWrite1h: 0, cacheRead: 0.15 },
  { model: 'qwen3-coder', input: 0.22, output: 0.95, cacheWrite5m: 0.275, cacheWrite1h: 0, cacheRead: 0.022 },
  { model: 'grok-code-fast-1', input: 0.2, output: 1.5, cacheWrite5m: 0.25, cacheWrite1h: 0, cacheRead: 0.02 },
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
  const lc = p.longContext;
  const sum = lc && t.inputTokens + t.cacheReadTokens + t.cacheWrite5mTokens + t.cacheWrite1hTokens > lc.above
    ? (t.inputTokens * lc.input + t.outputTokens * lc.output + t.cacheWrite5mTokens * lc.cacheWrite5m + t.cacheWrite1hTokens * lc.cacheWrite1h + t.cacheReadTokens * lc.cacheRead) / 1e6
    : term(t.inputTokens, p.input, a.input) +
      term(t.outputTokens, p.output, a.output) +
      term(t.cacheWrite5mTokens, p.cacheWrite5m, a.cacheWrite5m) +
      term(t.cacheWrite1hTokens, p.cacheWrite1h, a.cacheWrite1h) +
      term(t.cacheReadTokens, p.cacheRead, a.cacheRead);
  return speed === 'fast' ? sum * (p.fastMultiplier ?? 1) : sum;
}
