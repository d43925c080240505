// The agent runtimes svc runs (docs/runner.md "Runtimes"). Adding one: a folder runner/runtimes/<name>/
// whose index.ts exports a RuntimeDef (types.ts), its name in protocol/usage.ts RUNTIMES (the wire's and
// the database's list), and a line here. The `satisfies` below fails to compile until both agree.
import type { Runtime } from '../../protocol/usage.ts';
import { claude } from './claude/index.ts';
import { codex } from './codex/index.ts';
import { gemini } from './gemini/index.ts';
import { opencode } from './opencode/index.ts';
import type { RuntimeDef } from './types.ts';

export const RUNTIMES = {
  claude,
  codex,
  gemini,
  opencode,
} satisfies { [N in Runtime]: RuntimeDef<N> };

export const RUNTIME_LIST: readonly RuntimeDef[] = Object.values(RUNTIMES);

export const runtimeDef = (name: Runtime): RuntimeDef => RUNTIMES[name];
