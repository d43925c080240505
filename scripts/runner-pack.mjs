// dist/svc-runner.mjs as the build writes it (esbuild.config.mjs, buildRunner): one file that is a small ES
// module, the loader (runner/boot.ts), and the runner itself as the comment of a function declared in it:
//
//   #!/usr/bin/env node
//   // svc-runner <version> (<build>). …
//   function svcRunnerBody(){/*(function(require,module,exports,__svcUrl){"use strict";
//   …the runner, built from runner/cli.ts as CommonJS…
//   })*/}
//   …the loader…
//
// Node 20 keeps no compiled code of an ES module between runs, so each command compiled the whole file first.
// A comment costs V8 a scan for its end. The loader takes the body from `svcRunnerBody.toString()`, a slice of
// the module's own source text (no copy), and compiles it with node:vm, which takes and makes V8 code caches
// (docs/runner.md, "Compile cache"). The body must not end that comment early: escapeCommentEnd rewrites the few
// places where it does, keeping what they mean.
import { createHash } from 'node:crypto';
import * as acorn from 'acorn';
import * as esbuild from 'esbuild';

/** The text before the body's source on its line, and the text after it. */
export const BODY_HEAD = 'function svcRunnerBody(){/*';
export const BODY_TAIL = '*/}';
/** The lines of the file before the body's first: the hashbang and the comment that says what this is. */
export const BODY_LINE_OFFSET = 2;
const WRAP_OPEN = '(function(require,module,exports,__svcUrl){"use strict";\n';
const WRAP_CLOSE = '\n})';

const at = (code, i) => {
  const lines = code.slice(0, i).split('\n');
  return `line ${lines.length}, column ${lines.at(-1).length + 1}: ...${code.slice(Math.max(0, i - 40), i + 40)}...`;
};

// `code` with every star-slash (the end of a block comment) rewritten so that it can sit in a block comment,
// meaning the same: in a string `*` then an escaped slash; in a regular expression an empty group `(?:)`
// between a final star (a quantifier or an escaped star) and the closing slash, and an escaped slash inside a
// class. Throws, naming the place, for any other (in a template literal, which may be read raw; a comment kept
// by esbuild, such as a licence; an operator `*` before a regular expression): write that source differently.
export function escapeCommentEnd(code) {
  if (!code.includes('*/')) return code;
  const edits = [];
  const onToken = (t) => {
    const text = code.slice(t.start, t.end);
    if (!text.includes('*/')) return;
    const kind = t.type.label;
    if (kind === 'string') edits.push([t.start, t.end, text.replaceAll('*/', '*\\/')]);
    else if (kind === 'regexp') {
      const close = text.lastIndexOf('/');
      const body = text.slice(0, close).replaceAll('*/', '*\\/');
      edits.push([t.start, t.end, (body.endsWith('*') ? `${body}(?:)` : body) + text.slice(close)]);
    } else throw new Error(`the runner bundle has "*/" in a ${kind} token at ${at(code, t.start)}`);
  };
  acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, allowHashBang: true, onToken });
  let out = '';
  let last = 0;
  for (const [start, end, text] of edits) (out += code.slice(last, start) + text), (last = end);
  out += code.slice(last);
  const left = out.indexOf('*/');
  if (left >= 0) throw new Error(`the runner bundle has "*/" outside a string or regular expression (a comment, or across two tokens) at ${at(out, left)}`);
  return out;
}

/** The hash the loader's cache names carry: a cache made for other code is never offered to V8. */
const bodyHash = (body) => createHash('sha256').update(body).digest('hex').slice(0, 16);

/** The body as the file holds it (escaped, wrapped); its hash for the loader's build. */
function packBody(code) {
  const body = WRAP_OPEN + escapeCommentEnd(code) + WRAP_CLOSE;
  return { body, hash: bodyHash(body) };
}

/** What the loader's build defines (runner/boot.ts declares them). */
const loaderDefines = (hash) => ({
  __SVC_BODY_HASH__: JSON.stringify(hash),
  __SVC_BODY_HEAD__: JSON.stringify(BODY_HEAD),
  __SVC_BODY_TAIL__: JSON.stringify(BODY_TAIL),
  __SVC_BODY_LINE_OFFSET__: String(BODY_LINE_OFFSET),
});

/**
 * The whole file for `code` (a CommonJS-style build that uses `require`, `module`, `exports` and `__svcUrl`):
 * the header line `title`, the body in its comment, and the loader, an ES module built from runner/boot.ts
 * under `root` (the project).
 */
export async function packFile(code, { root, title }) {
  if (title.includes('\n') || title.includes('*/')) throw new Error('the runner file title must be one line of plain text');
  const { body, hash } = packBody(code);
  const loader = await esbuild.build({
    stdin: { contents: "import { bootPacked } from './runner/boot.ts';\nbootPacked(import.meta.url);\n", resolveDir: root, sourcefile: 'svc-runner-loader.ts', loader: 'ts' },
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    charset: 'ascii',
    legalComments: 'none',
    define: loaderDefines(hash),
    write: false,
    logLevel: 'warning',
  });
  return `#!/usr/bin/env node\n// ${title}\n${BODY_HEAD}${body}${BODY_TAIL}\n${loader.outputFiles[0].text}`;
}

/**
 * A source map of the body's build placed on the packed file: the build's first line is the file's line
 * BODY_LINE_OFFSET + 2 (the wrapper's head has a line of its own), so the map starts with BODY_LINE_OFFSET + 1
 * lines that map nothing.
 */
export function shiftMap(map) {
  const m = typeof map === 'string' ? JSON.parse(map) : map;
  return { ...m, mappings: ';'.repeat(BODY_LINE_OFFSET + 1) + m.mappings };
}
