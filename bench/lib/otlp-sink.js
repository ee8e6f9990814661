'use strict';
// A stand-in OTLP/HTTP collector for `bench/run.js --trace`: answers every POST with 200 `{}` after
// reading the body, counting the batches and bytes, so the gateway's full export path runs (serialise,
// POST, answer) without a real collector's own CPU competing in the measured machine.
const http = require('node:http');

function startOtlpSink() {
  const stats = { posts: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (d) => (stats.bytes += d.length));
    req.on('end', () => {
      stats.posts += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, stats, close: () => server.close() })),
  );
}

module.exports = { startOtlpSink };
