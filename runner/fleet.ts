// The daemon's fleet collectors for the orchestrator contract (docs/orchestrator.md): the events.jsonl
// tail (fleet.eventsPollSeconds) and the pane watcher (fleet.pollSeconds), and how runner-observed fleet
// events (orchestrator.started/stopped, slot.stopped, pane.*) reach the spool: kind = the catalogue type
// (internal types `fleet.<type>`), source `project:<id>`, payload {project, slot?, issue?, data, origin}.
import { join } from 'node:path';
import type { ProjectEntry, RunnerConfig } from './config.ts';
import { CATALOGUE_TYPES } from './events-file.ts';
import { EventsTail } from './events-tail.ts';
import { errorText, log } from './log.ts';
import { PaneWatcher } from './panes.ts';
import type { FleetEvent } from './panes.ts';
import { spoolDir, stateDir } from './paths.ts';
import type { Env } from './paths.ts';
import { Spool } from './spool.ts';
import type { NewEvent } from './spool.ts';

export const eventsOffsetsPath = (env: Env) => join(stateDir(env), 'events-offsets.json');

export function fleetSpoolEvent(e: FleetEvent): NewEvent {
  return {
    source: `project:${e.projectId}`,
    kind: CATALOGUE_TYPES.has(e.type) ? e.type : `fleet.${e.type}`,
    payload: { project: e.projectId, type: e.type, ...(e.slot ? { slot: e.slot } : {}), ...(e.issue ? { issue: e.issue } : {}), data: e.data, origin: 'runner' },
  };
}

/** The daemon's spool, once it runs; commands report through it. */
let sink: Spool | null = null;
const fallback = new Map<string, Spool>();

/** Spool a fleet event from a command handler (never fails the command: a spool error is logged). */
export function reportFleetEvent(env: Env, runnerId: string | undefined, e: FleetEvent): void {
  try {
    let spool = sink;
    if (!spool) {
      const dir = spoolDir(env);
      spool = fallback.get(dir) ?? new Spool(dir, runnerId);
      fallback.set(dir, spool);
    }
    spool.append([fleetSpoolEvent(e)]);
  } catch (err) {
    log.error('could not spool a fleet event', { type: e.type, project: e.projectId, error: errorText(err) });
  }
}

/** Test and benchmark override of fleet.pollSeconds / eventsPollSeconds, in milliseconds. */
const override = (v: string | undefined) => (v && /^\d{2,7}$/.test(v) ? Number(v) : null);

export class Fleet {
  readonly tail: EventsTail;
  readonly panes: PaneWatcher;

  constructor(
    private readonly spool: Spool,
    config: RunnerConfig,
    env: Env,
    private readonly projects: () => readonly ProjectEntry[],
  ) {
    sink = spool;
    // The spool's own id prefix, so derived ids look like the runner's other event ids.
    const prefix = (config.runnerId ?? 'r').replace(/[^A-Za-z0-9_-]/g, '').slice(0, 12).replace(/[-_]+$/, '') || 'r';
    const eventsMs = override(env.SVC_EVENTS_POLL_MS) ?? config.fleet.eventsPollSeconds * 1000;
    const panesMs = override(env.SVC_PANES_POLL_MS) ?? config.fleet.pollSeconds * 1000;
    this.tail = new EventsTail(spool, eventsOffsetsPath(env), eventsMs, prefix);
    this.panes = new PaneWatcher(env, panesMs, projects, (e) => this.spool.append([fleetSpoolEvent(e)]));
  }

  start(): void {
    this.tail.start(this.projects());
    this.panes.start();
  }

  /** The watch list changed (welcome/projects frames). */
  update(): void {
    this.tail.setProjects(this.projects());
  }

  stop(): void {
    this.tail.stop();
    this.panes.stop();
    if (sink === this.spool) sink = null;
  }
}
