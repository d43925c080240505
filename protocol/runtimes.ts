// The agent runtimes svc knows, by wire name, with the name people use (pages, runner messages). The one list
// the wire (protocol/usage.ts), the server's schemas, the pages and the runner (runner/runtimes/index.ts, which
// must have a definition for each) agree on. No imports: the pages load it.
export const RUNTIMES = ['claude', 'codex', 'gemini', 'opencode'] as const;
export type Runtime = (typeof RUNTIMES)[number];

export const RUNTIME_LABELS: Record<Runtime, string> = { claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI', opencode: 'OpenCode' };

/** The label of a runtime name from an answer (an unknown name as it is). */
export const runtimeLabel = (name: string | null | undefined): string => (name ? (RUNTIME_LABELS as Record<string, string>)[name] ?? name : '');
