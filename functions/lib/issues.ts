// Plain-language text for zod's built-in checks, said once and relative to the field it is shown with
// ("must be at most 100 characters", not "Too big: expected string to have <=100 characters").
// Passed as the parse-time error map, so a schema's own message always wins; never echoes the value.
import type { z } from 'zod';

const count = (n: number | bigint, one: string, many = `${one}s`) => `${n} ${Number(n) === 1 ? one : many}`;

const TYPES: Record<string, string> = {
  string: 'must be text',
  number: 'must be a number',
  int: 'must be a whole number',
  boolean: 'must be true or false',
  array: 'must be a list',
  object: 'must be an object',
  null: 'must be null',
};

const FORMATS: Record<string, string> = {
  email: 'must be an e-mail address',
  url: 'must be a URL',
  uuid: 'must be a UUID',
  datetime: 'must be a date and time with a time zone (ISO 8601)',
  date: 'must be a date (YYYY-MM-DD)',
  regex: 'has the wrong format',
};

function bound(issue: { origin: string; inclusive?: boolean }, n: number | bigint, atLeast: boolean): string | undefined {
  const edge = atLeast ? (issue.inclusive === false ? 'more than' : 'at least') : issue.inclusive === false ? 'less than' : 'at most';
  switch (issue.origin) {
    case 'string':
      return atLeast && Number(n) === 1 && issue.inclusive !== false ? 'must not be empty' : `must be ${edge} ${count(n, 'character')}`;
    case 'array':
    case 'set':
      return atLeast && Number(n) === 1 && issue.inclusive !== false ? 'must have at least one item' : `must have ${edge} ${count(n, 'item')}`;
    case 'number':
    case 'int':
    case 'bigint':
    case 'date':
      return `must be ${edge} ${n}`;
    default:
      return undefined;
  }
}

/** The message for a zod issue the schema did not word itself; undefined keeps zod's. */
export function humanIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : (TYPES[issue.expected] ?? `must be ${issue.expected}`);
    case 'too_small':
      return bound(issue, issue.minimum, true);
    case 'too_big':
      return bound(issue, issue.maximum, false);
    case 'invalid_value':
      return issue.values.length <= 10 ? `must be one of ${issue.values.map((v) => String(v)).join(', ')}` : 'is not one of the allowed values';
    case 'invalid_format':
      return FORMATS[issue.format] ?? `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'invalid_union':
      return 'is not valid here';
    default:
      return undefined;
  }
}
