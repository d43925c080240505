// Checks an exchange with the fake GitHub against GitHub's own published OpenAPI description (npm
// `@octokit/openapi`, generated/api.github.com.json, OpenAPI 3.0.3): the operation is found from the
// method and the path (templates like /repos/{owner}/{repo}/pulls/{pull_number}, a literal segment
// winning over a template), then
//   - the query parameters are ones the operation takes, with values its schemas allow;
//   - the request body matches the operation's requestBody schema (and is there when required);
//   - the answer's JSON body matches the response schema declared for that status. A status the
//     operation does not declare (GitHub's description omits most 401/403/429/5xx answers) is not checked.
// Each mismatch names the exchange and the JSON path of the offending value ($.head.repo.owner.login).
//
// OpenAPI 3.0's schemas are JSON Schema with `nullable: true` instead of a "null" type: they are turned
// into draft-07 for ajv (a `type` gains "null", an `enum` gains null, a schema without a type becomes
// anyOf [it, {type: null}]). The description (13 MB) is read once per process on first use (~0.3 s);
// each operation's validators are compiled on first use and cached.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

export interface Exchange {
  method: string;
  /** The path without the query. */
  path: string;
  query?: URLSearchParams;
  requestBody?: unknown;
  status: number;
  /** The parsed JSON the fake answered with (undefined: no body). */
  responseBody?: unknown;
}

export interface Mismatch {
  /** "GET /repos/acme/app/pulls/1 → 200" */
  exchange: string;
  /** GitHub's operation: "GET /repos/{owner}/{repo}/pulls/{pull_number}" (or the path when there is none). */
  operation: string;
  /** What did not match: GitHub's operation, the request or the answer. */
  part: 'operation' | 'query' | 'request' | 'response';
  /** The JSON path of the value, $ for the whole body. */
  at: string;
  message: string;
}

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
const BASE = 'https://api.github.com/openapi.json';
const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** OpenAPI 3.0 schema → JSON Schema draft-07: nullable as a "null" type, refs absolute to the one document. */
function convert(s: Json): Json {
  if (Array.isArray(s)) return s.map(convert);
  if (!s || typeof s !== 'object') return s;
  // Erratum: an installation's `account` is described as allOf [Simple User, Enterprise] — both at
  // once, which no account is; GitHub answers one or the other (its own example is a Simple User).
  if (Array.isArray(s.allOf) && s.allOf.map((x: Json) => x?.title).join() === 'Simple User,Enterprise') return convert({ ...s, allOf: undefined, anyOf: s.allOf });
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (v === undefined) continue;
    if (k === 'nullable' || k === 'example' || k === 'examples' || k === 'discriminator') continue;
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/')) out.$ref = BASE + v;
    else if (k === 'properties' && v && typeof v === 'object') out.properties = Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, convert(ps)]));
    else out[k] = convert(v);
  }
  if (s.nullable !== true) return out;
  if (typeof out.type === 'string') out.type = [out.type, 'null'];
  else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
  else if (out.type === undefined) return { anyOf: [out, { type: 'null' }] };
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

interface Operation {
  template: string;
  regex: RegExp;
  /** Literal segments first: /repos/{owner}/{repo}/installation before …/{path}. */
  params: number;
  op: Json;
}

interface Description {
  doc: Json;
  ajv: Ajv;
  operations: Map<string, Operation[]>;
  validators: Map<string, ValidateFunction | null>;
}

let loaded: Description | null = null;
/** How long reading the description and making the validator took (ms), for the record. */
export let loadMs = 0;

function description(): Description {
  if (loaded) return loaded;
  const t0 = performance.now();
  const file = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, logger: false });
  (addFormatsModule as unknown as { default?: (a: Ajv) => void }).default?.(ajv) ?? (addFormatsModule as unknown as (a: Ajv) => void)(ajv);
  ajv.addFormat('uri-template', true);
  ajv.addSchema({ $id: BASE, components: { schemas: convert(doc.components.schemas) } });
  const operations = new Map<string, Operation[]>();
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    const regex = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '([^/]+)')}$`);
    const params = (template.match(/\{/g) ?? []).length;
    for (const m of HTTP_METHODS) if (item[m]) operations.set(m, [...(operations.get(m) ?? []), { template, regex, params, op: item[m] }]);
  }
  for (const list of operations.values()) list.sort((a, b) => a.params - b.params);
  loaded = { doc, ajv, operations, validators: new Map() };
  loadMs = performance.now() - t0;
  return loaded;
}

/** A copy of one of the description's examples (components/examples/<name>), the base of the fake's answers. */
export function githubExample(name: string): Json {
  const e = description().doc.components.examples[name];
  if (!e) throw new Error(`GitHub's OpenAPI description has no example ${name}`);
  return structuredClone(e.value);
}

/** A local `#/components/…` object (parameter, response, request body) with its $ref followed. */
function deref(doc: Json, v: Json): Json {
  let x = v;
  for (let i = 0; x && typeof x.$ref === 'string' && i < 10; i++) x = x.$ref.slice(2).split('/').reduce((o: Json, k: string) => o?.[k], doc);
  return x;
}

/** GitHub's operation for a method and a path, or null. */
export function findOperation(method: string, path: string): { template: string; operationId: string; op: Json } | null {
  const d = description();
  const found = (d.operations.get(method.toLowerCase()) ?? []).find((o) => o.regex.test(path));
  return found ? { template: found.template, operationId: found.op.operationId, op: found.op } : null;
}

function validator(key: string, schema: Json): ValidateFunction | null {
  const d = description();
  if (!d.validators.has(key)) d.validators.set(key, schema ? d.ajv.compile(convert(schema)) : null);
  return d.validators.get(key)!;
}

/** ajv's errors as mismatches with a JSON path ($.a.b[0].c). */
function mismatches(exchange: string, operation: string, part: Mismatch['part'], root: string, errors: ErrorObject[] | null | undefined): Mismatch[] {
  // anyOf/oneOf also report each branch's failure; the branch errors say where, so those summaries go.
  const useful = (errors ?? []).filter((e, _, all) => !(['anyOf', 'oneOf'].includes(e.keyword) && all.some((o) => o !== e && o.instancePath.startsWith(e.instancePath) && o.schemaPath.startsWith(e.schemaPath.replace(/\/[^/]+$/, '')))));
  const seen = new Set<string>();
  return (useful.length ? useful : (errors ?? []))
    .map((e) => {
      const at = root + e.instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`)).join('');
      const extra = e.keyword === 'required' ? '' : e.keyword === 'enum' ? ` (${JSON.stringify((e.params as { allowedValues?: unknown }).allowedValues)})` : '';
      return { exchange, operation, part, at, message: `${e.message ?? e.keyword}${extra}` };
    })
    .filter((m) => !seen.has(`${m.at} ${m.message}`) && seen.add(`${m.at} ${m.message}`))
    .slice(0, 20);
}

/** Query values are strings: turn them into what the parameter's schema types them as. */
function queryValue(schema: Json, raw: string): unknown {
  const type = Array.isArray(schema?.type) ? schema.type[0] : schema?.type;
  if ((type === 'integer' || type === 'number') && raw.trim() !== '' && !Number.isNaN(Number(raw))) return Number(raw);
  if (type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true';
  if (type === 'array') return raw.split(',');
  return raw;
}

/** Every way the exchange differs from GitHub's description (empty: it matches). */
export function checkExchange(x: Exchange): Mismatch[] {
  const d = description();
  const name = `${x.method} ${x.path}${x.query?.size ? `?${x.query}` : ''} → ${x.status}`;
  const found = findOperation(x.method, x.path);
  if (!found) return [{ exchange: name, operation: x.path, part: 'operation', at: '$', message: `GitHub's REST API has no operation ${x.method.toUpperCase()} ${x.path}` }];
  const { op, template } = found;
  const key = `${x.method.toLowerCase()} ${template}`;
  const out: Mismatch[] = [];
  const params = ((op.parameters ?? []) as Json[]).map((p) => deref(d.doc, p)).filter((p) => p?.in === 'query');
  for (const [q, raw] of x.query ?? []) {
    const p = params.find((y) => y.name === q);
    if (!p) {
      out.push({ exchange: name, operation: key, part: 'query', at: q, message: `${template} takes no query parameter ${q}` });
      continue;
    }
    const v = validator(`${key} ?${q}`, p.schema);
    if (v && !v(queryValue(p.schema, raw))) out.push(...mismatches(name, key, 'query', q, v.errors));
  }
  const body = deref(d.doc, op.requestBody);
  const bodySchema = body?.content?.['application/json']?.schema;
  if (x.requestBody === undefined && body?.required) out.push({ exchange: name, operation: key, part: 'request', at: '$', message: `${template} requires a JSON body` });
  else if (x.requestBody !== undefined && !bodySchema) out.push({ exchange: name, operation: key, part: 'request', at: '$', message: `${template} takes no JSON body` });
  else if (x.requestBody !== undefined) {
    const v = validator(`${key} body`, bodySchema);
    if (v && !v(x.requestBody)) out.push(...mismatches(name, key, 'request', '$', v.errors));
  }
  const response = deref(d.doc, op.responses?.[String(x.status)] ?? op.responses?.default);
  if (!response || x.status === 304) return out; // not a status GitHub describes for it
  const schema = response.content?.['application/json']?.schema ?? response.content?.['application/scim+json']?.schema;
  if (!schema) {
    if (x.responseBody !== undefined && x.responseBody !== '') out.push({ exchange: name, operation: key, part: 'response', at: '$', message: `GitHub answers ${x.status} to ${template} without a body` });
    return out;
  }
  const v = validator(`${key} ${x.status}`, schema);
  if (v && !v(x.responseBody)) out.push(...mismatches(name, key, 'response', '$', v.errors));
  return out;
}

/** Every mismatch any fake of this process recorded (a test file's last test asserts there is none). */
const everyMismatch: Mismatch[] = [];
let everyChecked = 0;

/**
 * Throws, listing them, when an exchange with a fake GitHub of this process did not match GitHub's
 * description; also when no exchange was checked at all (the hook is gone: the check could not fail).
 */
export function assertMatchesGitHub(): void {
  if (everyChecked === 0) throw new Error('no exchange with the fake GitHub was checked against the OpenAPI description');
  if (!everyMismatch.length) return;
  // One line per kind: the same field of the same operation fails on every call and every list item.
  const lines = [...new Map(everyMismatch.map((m) => [`${m.operation} ${m.part} ${m.at.replace(/\[\d+\]/g, '[]')} ${m.message}`, `${m.exchange}: ${m.part} ${m.at}: ${m.message}`])).values()].slice(0, 40);
  throw new Error(`${everyMismatch.length} mismatch(es) with GitHub's OpenAPI description (of ${everyChecked} exchanges):\n${lines.join('\n')}`);
}

/** Collects the mismatches of every exchange a fake records; the tests assert it stays empty. */
export interface OpenapiRecorder {
  record: (x: Exchange) => void;
  mismatches: Mismatch[];
  /** How many exchanges were checked. */
  checked: number;
}

export function openapiRecorder(): OpenapiRecorder {
  const r: OpenapiRecorder = {
    mismatches: [],
    checked: 0,
    record(x) {
      const found = checkExchange(x);
      r.checked++;
      r.mismatches.push(...found);
      everyChecked++;
      everyMismatch.push(...found);
    },
  };
  return r;
}
