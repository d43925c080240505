// The cost block in a pull request's description (issue #40 part 1; docs/cost.md, "The cost in the pull
// request's description"): svc owns the text between `<!-- svc:cost -->` and `<!-- /svc:cost -->` and
// rewrites only that; everything else in the description stays byte for byte. The runner applies it
// (pr.describe) to the description it reads just before writing, so a person's edit in between is kept.

export const COST_BLOCK_START = '<!-- svc:cost -->';
export const COST_BLOCK_END = '<!-- /svc:cost -->';

export interface CostBlockInput {
  costUsd: number;
  sessions: number;
  /** Models of the pull request's requests, any order; shown sorted, duplicates once. */
  models: string[];
  inputTokens: number;
  outputTokens: number;
  /** Cache writes (5 min + 1 h) and cache reads. */
  cacheWriteTokens: number;
  cacheReadTokens: number;
}

const num = (v: number) => Math.round(v).toLocaleString('en-US');

/** The block's text (without markers): "This pull request cost $4.10 over 3 agent sessions (model …, tokens …)". */
export function costBlockText(c: CostBlockInput): string {
  const models = [...new Set(c.models.filter(Boolean))].sort();
  const model = models.length === 0 ? 'model unknown' : `${models.length === 1 ? 'model' : 'models'} ${models.join(', ')}`;
  const tokens = `tokens ${num(c.inputTokens)} input, ${num(c.outputTokens)} output, ${num(c.cacheWriteTokens)} cache write, ${num(c.cacheReadTokens)} cache read`;
  const sessions = `${c.sessions} agent session${c.sessions === 1 ? '' : 's'}`;
  return `This pull request cost $${c.costUsd.toFixed(2)} over ${sessions} (${model}; ${tokens}).`;
}

/** `description` with the cost block set to `text`: replaced between the first end marker and the start
 *  marker nearest before it; appended after a blank line when there is no (complete) block — also when a person
 *  deleted it (svc adds it again). Line endings of the block follow the description's (CRLF stays CRLF). */
export function rewriteCostBlock(description: string | null | undefined, text: string): string {
  const d = description ?? '';
  const eol = d.includes('\r\n') ? '\r\n' : '\n';
  const body = text.replace(/\r?\n/g, eol);
  // The first end marker with a start marker before it; the start marker nearest to it (an orphaned start
  // marker earlier in the text is the person's text, kept).
  let end = d.indexOf(COST_BLOCK_END);
  while (end >= 0 && d.lastIndexOf(COST_BLOCK_START, end - COST_BLOCK_START.length) < 0) end = d.indexOf(COST_BLOCK_END, end + 1);
  const start = end < 0 ? -1 : d.lastIndexOf(COST_BLOCK_START, end - COST_BLOCK_START.length);
  if (start >= 0 && end >= 0) return d.slice(0, start + COST_BLOCK_START.length) + eol + body + eol + d.slice(end);
  const block = `${COST_BLOCK_START}${eol}${body}${eol}${COST_BLOCK_END}`;
  if (d.trim() === '') return d + block;
  const sep = d.endsWith(eol + eol) ? '' : d.endsWith(eol) ? eol : eol + eol;
  return d + sep + block + eol;
}
