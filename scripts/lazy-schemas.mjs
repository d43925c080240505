// The runner bundle's module-level zod schemas, built when first used (esbuild.config.mjs, the runner build).
//
// Each module of runner/ and protocol/ that imports zod declares its schemas at its top, and the one-file
// runner evaluates every module at start: ~6,500 calls of zod's constructor, one function shared by all schema
// kinds, for schemas most commands never parse. That was enough calls for V8 to optimise it in every daemon,
// which paged in ~3 MiB of the optimising compiler's code and kept an idle daemon above its memory goal
// (docs/performance.md, "Schemas built when first used"). This plugin rewrites, in the bundle only, each
// outermost schema expression evaluated at module level — `z.<factory>(…)` and the chain of schema methods
// after it — into `lazySchema(() => …)` (protocol/lazy-schema.ts). Expressions inside functions run when
// called and are left alone; so is a chain that ends in anything but a schema method (`.options`, `.parse(…)`,
// `.shape`), which may not be a schema, and one that registers its schema (`.meta(…)`, `.describe(…)`).
// The sources and the tests that import them run unchanged.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as acorn from 'acorn';
import * as esbuild from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const HELPER = join(ROOT, 'protocol', 'lazy-schema.ts');
/** The project's compiler options, as esbuild's build reads them (verbatimModuleSyntax keeps every import). */
const TSCONFIG = readFileSync(join(ROOT, 'tsconfig.json'), 'utf8');

/** `z.<name>` that are not schema factories. */
const NOT_FACTORIES = new Set([
  'config', 'registry', 'globalRegistry', 'parse', 'safeParse', 'parseAsync', 'safeParseAsync', 'encode', 'decode', 'safeEncode', 'safeDecode',
  'encodeAsync', 'decodeAsync', 'safeEncodeAsync', 'safeDecodeAsync', 'toJSONSchema', 'fromJSONSchema', 'prettifyError', 'treeifyError',
  'flattenError', 'formatError', 'setErrorMap', 'getErrorMap', 'locales', 'NEVER', 'core', 'util', 'regexes', 'ZodError', 'ZodRealError', 'function',
]);
/** Namespaces of factories: `z.iso.datetime()`, `z.coerce.number()`. */
const FACTORY_NAMESPACES = new Set(['iso', 'coerce']);
/** Methods of a schema that return a schema. */
const SCHEMA_METHODS = new Set([
  // every schema
  'check', 'clone', 'brand', 'refine', 'superRefine', 'overwrite', 'optional', 'exactOptional', 'nonoptional', 'nullable', 'nullish',
  'default', 'prefault', 'catch', 'pipe', 'readonly', 'transform', 'or', 'and', 'array', 'with',
  // strings
  'regex', 'includes', 'startsWith', 'endsWith', 'min', 'max', 'length', 'nonempty', 'lowercase', 'uppercase', 'trim', 'normalize',
  'toLowerCase', 'toUpperCase', 'slugify', 'email', 'url', 'httpUrl', 'jwt', 'emoji', 'guid', 'uuid', 'uuidv4', 'uuidv6', 'uuidv7', 'nanoid',
  'cuid', 'cuid2', 'ulid', 'base64', 'base64url', 'xid', 'ksuid', 'ipv4', 'ipv6', 'cidrv4', 'cidrv6', 'e164', 'datetime', 'date', 'time', 'duration',
  // numbers
  'gt', 'gte', 'lt', 'lte', 'int', 'safe', 'positive', 'nonnegative', 'negative', 'nonpositive', 'multipleOf', 'step', 'finite',
  // objects, arrays, enums
  'extend', 'safeExtend', 'merge', 'pick', 'omit', 'partial', 'required', 'strict', 'strip', 'passthrough', 'loose', 'catchall', 'keyof',
  'unwrap', 'extract', 'exclude', 'rest',
]);

// Not here, so a chain with one stays as it is: `register`, `meta` and `describe` add the schema to a registry
// (zod's global one for the last two), a side effect that must not wait for the schema's first use.

/** Whether `node` is a schema built from the zod namespace `z`: a factory call and schema methods after it. */
function isSchemaChain(node, z) {
  if (node.type !== 'CallExpression' || node.optional) return false;
  const callee = node.callee;
  if (callee.type !== 'MemberExpression' || callee.computed || callee.optional || callee.property.type !== 'Identifier') return false;
  const name = callee.property.name;
  const on = callee.object;
  if (on.type === 'Identifier') return on.name === z && !NOT_FACTORIES.has(name);
  if (on.type === 'MemberExpression' && !on.computed && on.object.type === 'Identifier' && on.object.name === z && FACTORY_NAMESPACES.has(on.property.name)) return true;
  return SCHEMA_METHODS.has(name) && isSchemaChain(on, z);
}

const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ClassDeclaration', 'ClassExpression']);

/**
 * The module compiled to JavaScript with its module-level schemas wrapped, and how many were. `source` is
 * TypeScript or JavaScript; a module that does not import zod as a namespace comes back compiled, nothing
 * wrapped (`wrapped: 0`).
 */
export function lazySchemaSource(source, path, helper = HELPER) {
  const code = esbuild.transformSync(source, { loader: path.endsWith('.ts') ? 'ts' : 'js', format: 'esm', target: 'es2022', sourcefile: path, tsconfigRaw: TSCONFIG }).code;
  const ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module' });
  const z = ast.body
    .filter((s) => s.type === 'ImportDeclaration' && s.source.value === 'zod')
    .flatMap((s) => s.specifiers)
    .find((s) => s.type === 'ImportNamespaceSpecifier')?.local.name;
  if (!z) return { code, wrapped: 0 };
  const spans = [];
  // `read`: the node's value is read at once (`….options`, `….parse(x)`), so deferring it gains nothing.
  const visit = (node, read = false) => {
    if (!node || typeof node.type !== 'string' || FUNCTIONS.has(node.type) || node.type === 'ImportDeclaration') return;
    if (isSchemaChain(node, z)) return read ? undefined : void spans.push([node.start, node.end]);
    if (node.type === 'MemberExpression') return visit(node.object, true), visit(node.property);
    for (const key of Object.keys(node)) {
      const v = node[key];
      if (Array.isArray(v)) v.forEach(visit);
      else if (v && typeof v.type === 'string') visit(v);
    }
  };
  ast.body.forEach(visit);
  if (!spans.length) return { code, wrapped: 0 };
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    out += code.slice(at, start) + `__lazySchema(() => (${code.slice(start, end)}))`;
    at = end;
  }
  out += code.slice(at);
  return { code: `import { lazySchema as __lazySchema } from ${JSON.stringify(helper)};\n${out}`, wrapped: spans.length };
}

/** The esbuild plugin: runner/ and protocol/ modules that import zod (not the helper itself). */
export const lazySchemas = () => ({
  name: 'lazy-schemas',
  setup(build) {
    build.onLoad({ filter: /\/(runner|protocol)\/.*\.ts$/ }, (args) => {
      if (args.path === HELPER || args.path.includes('/node_modules/')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!/from ['"]zod['"]/.test(source)) return undefined;
      return { contents: lazySchemaSource(source, args.path).code, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
});
