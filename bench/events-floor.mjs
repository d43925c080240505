#!/usr/bin/env node
// The floor for bench/events.mjs: the least a server can do to answer one page of the event list over
// HTTP — node:http and one postgres.js connection, GET /?after=<seq>&limit=<n> runs the bare loop's
// statement and joins the stored bodies, no authentication, no routing, no validation. Started by
// bench/events.mjs as a child process (like the real server) with DATABASE_URL; prints its port.
import http from 'node:http';
import postgres from 'postgres';

const sql = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://x');
    const rows = await sql`select seq, body from catalogue_events where seq > ${url.searchParams.get('after') ?? '0'}::bigint order by seq limit ${Number(url.searchParams.get('limit') ?? 100)}`;
    const next = rows.length ? JSON.stringify(String(rows[rows.length - 1].seq)) : 'null';
    res.writeHead(200, { 'content-type': 'application/json' }).end(`{"events":[${rows.map((r) => r.body).join(',')}],"next":${next}}`);
  } catch (err) {
    res.writeHead(500).end(String(err));
  }
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))));
