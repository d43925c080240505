// The second thread of a one-shot usage scan (parse.ts, scan.ts scanAll): built as its own small bundle that
// esbuild.config.mjs embeds in the runner as a string (so the one-file runner stays one file).
import { parentPort, workerData } from 'node:worker_threads';
import { drain, toWire } from './parse.ts';
import type { ParseJob } from './parse.ts';

const { jobs, order, next } = workerData as { jobs: ParseJob[]; order: number[]; next: SharedArrayBuffer };
parentPort!.postMessage(drain(jobs, order, new Int32Array(next)).map(([i, r]) => [i, toWire(r)]));
