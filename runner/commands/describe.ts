// runner.describe: host facts, versions, the agent runtimes found and this runner's capabilities.
import { arch, hostname, platform, release } from 'node:os';
import { PROTOCOL_VERSION, VERSION } from '../../protocol/version.ts';
import { target } from '../host.ts';
import { detectProfiles, reportProfile } from '../profiles.ts';
import { capabilities } from './context.ts';
import type { CommandContext } from './context.ts';

export async function runnerDescribe(_args: unknown, ctx: CommandContext) {
  const detected = await detectProfiles(ctx.config.profiles, ctx.env);
  const configured = await Promise.all(ctx.config.profiles.map((p) => reportProfile(p, ctx.env)));
  return {
    hostname: hostname(),
    os: platform(),
    osRelease: release(),
    arch: arch(),
    target: target(),
    node: process.version,
    version: VERSION,
    protocol: PROTOCOL_VERSION,
    uptimeSec: Math.round((Date.now() - ctx.startedAt) / 1000),
    runtimes: detected.map((r) => ({ runtime: r.profile.runtime, binary: r.binaryPath, version: r.version, authenticated: r.authenticated })),
    profiles: configured.map((r) => ({ id: r.profile.id, runtime: r.profile.runtime, found: Boolean(r.binaryPath), authenticated: r.authenticated })),
    projects: ctx.projects().length,
    disabledCommands: ctx.config.disabledCommands,
    capabilities: capabilities(ctx.config),
    ...(ctx.codehost ? { codehost: { ...ctx.codehost.describe(), login: await ctx.codehost.login() } } : {}),
  };
}
