// A Slack and Telegram receiver on loopback for the notification tests: it speaks just enough of both
// APIs — Slack incoming webhooks (`POST /services/…` answered "ok") and the Telegram Bot API
// (`POST /bot<token>/sendMessage` answered `{ok: true, result: …}`, 401 `{ok: false}` for a token it
// does not know) — and records what arrived. `fail(status)` makes every answer that status.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SlackMessage {
  path: string;
  body: Record<string, unknown>;
  headers: http.IncomingHttpHeaders;
}
export interface TelegramMessage {
  token: string;
  body: Record<string, unknown>;
  headers: http.IncomingHttpHeaders;
}

export interface ChatFake {
  url: string;
  /** A Slack incoming-webhook URL on this fake. */
  slackUrl: string;
  /** The token the fake Telegram accepts. */
  telegramToken: string;
  slack: SlackMessage[];
  telegram: TelegramMessage[];
  /** Every request, including refused ones. */
  hits: number;
  fail: (status: number | null) => void;
  close: () => Promise<void>;
}

export async function chatFake(host = '127.0.0.1'): Promise<ChatFake> {
  const slack: SlackMessage[] = [];
  const telegram: TelegramMessage[] = [];
  const telegramToken = '123456789:AAH-fake_token_for_tests_0123456789';
  let failing: number | null = null;
  const fake = { hits: 0 } as ChatFake;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      fake.hits++;
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      };
      if (failing !== null) return reply(failing, failing >= 500 ? 'unavailable' : 'refused');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return reply(400, 'invalid_payload');
      }
      const path = req.url ?? '';
      if (req.method === 'POST' && path.startsWith('/services/')) {
        if (typeof body.text !== 'string') return reply(400, 'no_text');
        slack.push({ path, body, headers: req.headers });
        return reply(200, 'ok');
      }
      const m = /^\/bot([^/]+)\/sendMessage$/.exec(path);
      if (req.method === 'POST' && m) {
        if (decodeURIComponent(m[1]) !== telegramToken) return reply(401, { ok: false, error_code: 401, description: 'Unauthorized' });
        if (body.chat_id === undefined || typeof body.text !== 'string') return reply(400, { ok: false, error_code: 400, description: 'Bad Request: message text is empty' });
        telegram.push({ token: m[1], body, headers: req.headers });
        return reply(200, { ok: true, result: { message_id: telegram.length, chat: { id: body.chat_id }, text: body.text } });
      }
      reply(404, 'not found');
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const { port } = server.address() as AddressInfo;
  const url = `http://${host}:${port}`;
  return Object.assign(fake, {
    url,
    slackUrl: `${url}/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX`,
    telegramToken,
    slack,
    telegram,
    fail: (status: number | null) => (failing = status),
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  });
}
