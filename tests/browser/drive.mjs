// Playwright on the host drives a Chromium that runs inside an agentjail
// sandbox, over CDP, through the service's ports proxy (docs/api.md,
// "Ports"; tests/network/browser.bats): no host port is published.
//
//   node drive.mjs API TOKEN SANDBOX PAGE-URL SCREENSHOT
//
// API: http://HOST:PORT of `agentjail serve --listen` (SANDBOX "-": API is
// a Chromium's own DevTools address, no proxy: bench/browser.py's peer).
// Prints one JSON line: the browser's version, the page's title and its
// results, and how long connecting and the whole took.
import { writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [api, token, sandbox, pageUrl, shot] = process.argv.slice(2);
const base = sandbox === '-' ? api : `${api}/v1/sandboxes/${sandbox}/ports/9222`;
const headers = { Authorization: `Bearer ${token}` };

// Chromium's /json/version names its WebSocket on its own loopback
// address: the same path, through the proxy
const version = await (await fetch(`${base}/json/version`, { headers })).json();
const wsPath = new URL(version.webSocketDebuggerUrl).pathname;
const wsUrl = `${base.replace(/^http/, 'ws')}${wsPath}`;

const t0 = Date.now();
const browser = await chromium.connectOverCDP(wsUrl, { headers, timeout: 30000 });
const connectMs = Date.now() - t0;
const context = browser.contexts()[0] ?? (await browser.newContext());
const page = await context.newPage();
await page.goto(pageUrl, { timeout: 30000 });
await page.waitForFunction(() => document.title === 'done', null, { timeout: 60000 });
const results = await page.evaluate(() => window.results);
const png = await page.screenshot({ fullPage: true });
writeFileSync(shot, png);
console.log(JSON.stringify({ browser: version.Browser, title: await page.title(), results,
  connectMs, totalMs: Date.now() - t0 }));
await browser.close();
