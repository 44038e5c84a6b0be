// Sharing a view: the trace viewer keeps its window and selected event in the address bar, "Copy
// link" gives that address, and opening it elsewhere shows the same window with the same event's
// details. On a server with a token, the first visit's ?token= is dropped from the address (a
// cookie carries it), so the copied link holds no token, and a browser without the cookie gets
// 401 from it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { bin, fixturesLogdir, launch, noBrowser, startServer } from './harness.mjs';

const port = 19700 + (process.pid % 1000);

test('a copied link reopens the trace window and the selected event', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, fixturesLogdir);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/?run=jax_mlp_small&tool=trace_viewer`);
    await page.waitForFunction(() => Number(document.getElementById('trace').dataset.drawn || 0) > 0);
    const box = await page.locator('#trace canvas').boundingBox();
    await page.mouse.move(box.x + box.width * 0.5, box.y + 200);
    for (let i = 0; i < 4; i++) await page.keyboard.press('w');
    await page.waitForTimeout(300);
    // Select the widest event in view.
    const target = await page.evaluate(() => {
      const t = window.xlensTrace;
      const d = t.state.data;
      const es = d.events.filter((e) => { const y = t.rowY(e.track, e.depth); return y != null && y > 40 && y < 800 && t.xOf(e.start_ps) > 270; });
      es.sort((a, b) => b.dur_ps - a.dur_ps);
      const e = es[0];
      return { track: e.track, index: e.index, name: d.names[e.name] };
    });
    await page.evaluate(({ track, index }) => window.xlensTrace.select(track, index), target);
    await page.waitForFunction((name) => document.getElementById('tv-details').dataset.name === name, target.name);
    await page.waitForFunction(() => new URL(location.href).searchParams.has('event'));
    const shown = await page.evaluate(() => [window.xlensTrace.state.start, window.xlensTrace.state.end]);
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('event'), `${target.track}.${target.index}`);
    assert.equal(Number(url.searchParams.get('start_ps')), Math.floor(shown[0]));
    assert.equal(Number(url.searchParams.get('end_ps')), Math.ceil(shown[1]));

    await page.click('#copy-link');
    const copied = await page.inputValue('#share-url');
    assert.equal(copied, page.url());

    // Someone else opens it.
    const other = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    other.on('pageerror', (e) => errors.push(String(e)));
    await other.goto(copied);
    await other.waitForFunction((name) => document.getElementById('tv-details').dataset.name === name, target.name);
    const theirs = await other.evaluate(() => [window.xlensTrace.state.start, window.xlensTrace.state.end]);
    assert.ok(Math.abs(theirs[0] - shown[0]) <= 1 && Math.abs(theirs[1] - shown[1]) <= 1, `${theirs} vs ${shown}`);
    assert.equal(await other.textContent('#tv-details h3'), target.name);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.kill();
  }
});

test('an open op of the op profile is in the link', { skip: noBrowser }, async () => {
  const server = await startServer(port + 2, fixturesLogdir);
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port + 2}/?run=jax_mlp_small&tool=op_profile`);
    const ops = page.locator('details[data-op]');
    assert.ok((await ops.count()) > 5);
    const fifth = ops.nth(4);
    // Unfold the tree down to it, as a reader would.
    await fifth.evaluate((d) => { for (let p = d.parentElement?.closest('details'); p; p = p.parentElement?.closest('details')) p.open = true; });
    const name = await fifth.getAttribute('data-op');
    const program = await fifth.getAttribute('data-program');
    await fifth.locator('summary').first().click();
    await page.waitForFunction(() => new URL(location.href).searchParams.has('op'));
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('op'), name);
    assert.equal(url.searchParams.get('program'), program);
    const other = await browser.newPage();
    await other.goto(url.href);
    const open = await other.$$eval('details[data-op]', (ds) => ds.filter((d) => d.open).map((d) => [d.dataset.op, d.dataset.program]));
    assert.deepEqual(open, [[name, program]]);
    assert.ok(await other.locator(`details[data-op="${name}"][data-program="${program}"] .op-details`).isVisible());
  } finally {
    await browser.close();
    server.kill();
  }
});

test('with a token: the link has none, and works only with the cookie', { skip: noBrowser }, async () => {
  const token = 'share-test-token-7f3a';
  const server = await startServer(port + 1, fixturesLogdir, token);
  const browser = await launch();
  try {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`http://127.0.0.1:${port + 1}/?run=jax_mlp_small&token=${token}&tool=hlo_stats`);
    assert.equal(page.url(), `http://127.0.0.1:${port + 1}/?run=jax_mlp_small&tool=hlo_stats`);
    assert.ok((await page.textContent('main')).length > 100);
    await page.click('#copy-link');
    const copied = await page.inputValue('#share-url');
    assert.ok(!copied.includes(token), copied);
    // The same browser (cookie) opens it; a fresh one gets 401 and is told what to do.
    const again = await ctx.newPage();
    const ok = await again.goto(copied);
    assert.equal(ok.status(), 200);
    const stranger = await (await browser.newContext()).newPage();
    const r = await stranger.goto(copied);
    assert.equal(r.status(), 401);
    assert.match(await stranger.textContent('body'), /needs its token/);
  } finally {
    await browser.close();
    server.kill();
  }
});
