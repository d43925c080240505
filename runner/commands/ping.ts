// runner.ping: liveness (spec: Server commands to a runner).
export async function runnerPing(): Promise<{ pong: true; time: string }> {
  return { pong: true, time: new Date().toISOString() };
}
