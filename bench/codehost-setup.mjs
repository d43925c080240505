// Shared by bench/ghapp.mjs and bench/codehost-queue.mjs: two real server processes on one PostgreSQL
// database, an instance admin on the first, a paired runner, one project of `repo` on it and a
// registered GitHub App (its webhookUrl and webhookSecret), all made through the API. Each server's
// cleanup is put first in `cleanups`.
export const okJson = async (res) => {
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  return res.json();
};

export async function appOnTwoServers({ url, key, name, repo, cleanups }) {
  const { startServer } = await import('../test/helpers/server.ts');
  const { pairRunner } = await import('../test/helpers/wsclient.ts');
  const env = { APP_ENCRYPTION_KEY: key };
  const a = await startServer({ admin: true, env, dbEnv: { DATABASE_URL: url } });
  cleanups.unshift(() => a.cleanup());
  const b = await startServer({ env, dbEnv: { DATABASE_URL: url } });
  cleanups.unshift(() => b.cleanup());
  const runner = await pairRunner(a.api, a.url, name);
  const project = await okJson(await a.api('/api/projects', { method: 'POST', json: { name, repo, runnerId: runner.runnerId, rootPath: `/srv/${name}` } }));
  const app = await okJson(await a.api('/api/github-apps', { method: 'POST', json: { name } }));
  return { a, b, runner, project, app };
}
