// A LISTEN/NOTIFY payload read as JSON (the relays between server processes: runners/rebalance.ts,
// runners/terminal-channels.ts). A payload that is not JSON is ignored by its listener: `undefined`.
export function parseNotice<T>(payload: string): T | undefined {
  try {
    return JSON.parse(payload) as T;
  } catch {
    return undefined;
  }
}
