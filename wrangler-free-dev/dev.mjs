// Local dev server without Cloudflare tooling: rebuild on change (esbuild watch) and restart
// dist/server.mjs after each server build. Usage: npm run dev
import { spawn } from 'node:child_process';
import { watch } from 'node:fs';
import * as esbuild from 'esbuild';
import { builds, copyStatic, publishRunner, runnerBody, web, writeIndex, writeRunner } from '../esbuild.config.mjs';

let child;
let restartTimer;
function restart() {
  clearTimeout(restartTimer);
  restartTimer = setTimeout(() => {
    const start = () => {
      child = spawn(process.execPath, ['--enable-source-maps', 'dist/server.mjs'], { stdio: 'inherit', env: process.env });
    };
    if (child && child.exitCode === null) {
      child.once('exit', start);
      child.kill('SIGTERM');
    } else start();
  }, 100);
}

const onEnd = (name, after) => ({
  name,
  setup(build) {
    build.onEnd((result) => {
      if (result.errors.length) return console.error(`[dev] ${name}: build failed, keeping the previous version`);
      console.log(`[dev] ${name} rebuilt`);
      after?.(result);
    });
  },
});

const contexts = await Promise.all([
  ...builds.map((b, i) =>
    esbuild.context({
      logLevel: 'warning',
      ...b,
      // The admin pages: each rebuild has new hashed names, which index.html must name (older files stay until a full build).
      plugins: [onEnd(b.outfile ?? b.outdir, i === 0 ? restart : b === web ? (r) => writeIndex(r.metafile) : undefined)],
    }),
  ),
  // The runner: its body built, then packed with its loader into the one file (esbuild.config.mjs, writeRunner).
  esbuild.context({
    logLevel: 'warning',
    ...runnerBody,
    plugins: [...runnerBody.plugins, onEnd(runnerBody.outfile, async (r) => (await writeRunner(r.outputFiles), publishRunner()))],
  }),
]);
copyStatic();
watch('web-static', (_event, file) => (file === 'index.html' ? contexts[builds.indexOf(web)].rebuild() : copyStatic()));
await Promise.all(contexts.map((c) => c.watch()));

const stop = async () => {
  await Promise.all(contexts.map((c) => c.dispose()));
  child?.kill('SIGTERM');
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
