// The value pattern of an inbound trigger (docs/triggers.md, "Value pattern"), compiled and matched with
// re2js, a pure-JavaScript port of RE2. RE2 runs an automaton over the value instead of backtracking, so
// its time grows with the value's length times the pattern's size and never exponentially: `(a|a)*b`
// or `((a+))+`, which freeze a backtracking engine on a 30-character value, answer a 10,000-character
// one in milliseconds (issue #33). The pattern is a user's (a project admin's) and the value a
// caller's, and both run on the server's one main thread for every placeholder of every delivery.
//   syntax   RE2's: no backreferences, no lookaround, no possessive quantifiers; a pattern RE2 cannot
//            compile is refused when saved with RE2's own reason (valuePatternProblem)
//   size     at most MAX_PATTERN_SIZE instructions once compiled: matching costs up to (value length ×
//            size) steps, so the size is what bounds one value's worst case (~45 ms measured for 500
//            characters near the limit, where a hostile pattern defeats RE2's DFA)
//   whole    a value matches when the WHOLE value does (RE2's full match = `^(?:pattern)$`, as before)
//   cache    compiled patterns are kept (LRU) by their text: compiling costs 0.2–15 ms, a match of a
//            short value a few µs, and each kept pattern keeps its warm DFA (bounded by re2js to ~8 MB)
import { RE2JS } from 're2js';

/** Compiled instructions a value pattern may have (RE2's program size). */
export const MAX_PATTERN_SIZE = 1000;
const CACHE_ENTRIES = 32;

export interface ValuePattern {
  readonly source: string;
  /** RE2's program size: the matching cost per character is at most proportional to it. */
  readonly size: number;
  /** Does the WHOLE value match? */
  test(value: string): boolean;
}

type Compiled = ValuePattern | { problem: string };
const cache = new Map<string, Compiled>();

/** Compile with RE2, or say why not in words an admin can act on. */
function compile(source: string): Compiled {
  let re: RE2JS;
  try {
    re = RE2JS.compile(source);
  } catch (err) {
    // RE2JSSyntaxException.message is "error parsing regexp: <reason>: `<where>`".
    const reason = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : String(err);
    return { problem: `is not a regular expression RE2 can compile: ${reason} (RE2 syntax has no backreferences or lookaround; see docs/triggers.md)` };
  }
  const size = re.programSize();
  if (size > MAX_PATTERN_SIZE) {
    return { problem: `is too large: it compiles to ${size} instructions, at most ${MAX_PATTERN_SIZE} (a repeat {n,m} copies its group m times; values are at most 500 characters, so * or + needs no bound)` };
  }
  return { source, size, test: (value) => re.testExact(value) };
}

function cached(source: string): Compiled {
  let entry = cache.get(source);
  if (entry) cache.delete(source); // re-inserted below: the Map's order is the LRU order
  else entry = compile(source);
  cache.set(source, entry);
  if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
  return entry;
}

/** The compiled pattern, or null when it is not usable (valuePatternProblem says why). */
export function compileValuePattern(source: string): ValuePattern | null {
  const entry = cached(source);
  return 'problem' in entry ? null : entry;
}

/** Why a value pattern cannot be used (a sentence that follows the field's name), or null when it can. */
export function valuePatternProblem(source: string): string | null {
  const entry = cached(source);
  return 'problem' in entry ? entry.problem : null;
}
