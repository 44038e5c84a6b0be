// The trace viewer in a real browser: it draws the bundled demo, W zooms, clicking an event pins a
// details panel with that event's name, and an XLA op's details link to its HLO graph. Needs
// Debian's chromium (CHROMIUM, default /usr/bin/chromium) and an xlens binary (XLENS_BIN, default
// ../../target/debug/xlens).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, bin, fixturesLogdir, launch, noBrowser, startServer } from './harness.mjs';

const port = 18700 + (process.pid % 1000);

test('trace viewer draws, zooms with W, and pins details on click', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, undefined);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const runs = await (await fetch(`http://127.0.0.1:${port}/api/runs`)).json();
    await page.goto(`http://127.0.0.1:${port}/?run=${encodeURIComponent(runs[0].name)}&tool=trace_viewer`);
    await page.waitForFunction(() => Number(document.getElementById('trace').dataset.drawn || 0) > 0);
    const drawn = Number(await page.getAttribute('#trace', 'data-drawn'));
    assert.ok(drawn > 50, `canvas drew ${drawn} boxes`);
    // Redraw a few times (as panning does) and keep the median frame time.
    const drawMs = await page.evaluate(async () => {
      const ts = [];
      for (let i = 0; i < 15; i++) {
        window.dispatchEvent(new KeyboardEvent('keydown', { key: i % 2 ? 'a' : 'd' }));
        await new Promise((r) => requestAnimationFrame(r));
        ts.push(Number(document.getElementById('trace').dataset.drawMs));
      }
      ts.sort((a, b) => a - b);
      return ts[7];
    });

    // W zooms in at the cursor: the window shrinks.
    const before = await page.evaluate(() => window.xlensTrace.state.end - window.xlensTrace.state.start);
    const box = await page.locator('#trace canvas').boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + 200);
    for (let i = 0; i < 3; i++) await page.keyboard.press('w');
    const after = await page.evaluate(() => window.xlensTrace.state.end - window.xlensTrace.state.start);
    assert.ok(after < before * 0.6, `zoomed from ${before} to ${after}`);
    await page.keyboard.press('0'); // back to the whole trace
    await page.waitForTimeout(300);

    // Click the widest visible event and expect its name in the details panel.
    const target = await page.evaluate(() => {
      const t = window.xlensTrace;
      const d = t.state.data;
      const es = d.events.filter((e) => t.rowY(e.track, e.depth) != null && t.rowY(e.track, e.depth) > 40 && t.rowY(e.track, e.depth) < 900);
      es.sort((a, b) => b.dur_ps - a.dur_ps);
      const e = es[0];
      return { x: (t.xOf(e.start_ps) + t.xOf(e.start_ps + e.dur_ps)) / 2, y: t.rowY(e.track, e.depth), name: d.names[e.name] };
    });
    await page.mouse.click(box.x + target.x, box.y + target.y);
    await page.waitForFunction((name) => document.getElementById('tv-details').dataset.name === name, target.name);
    const text = await page.textContent('#tv-details h3');
    assert.equal(text, target.name);
    // The details stay after the mouse moves away, and their text can be selected.
    await page.mouse.move(box.x + 5, box.y + 5);
    await page.waitForTimeout(200);
    assert.equal(await page.textContent('#tv-details h3'), target.name);
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.getElementById('tv-details')).userSelect), 'none');

    // An XLA op's details link to the HLO graph around it, and the link opens that graph.
    const hit = await page.evaluate(async () => {
      const r = await fetch('/api/trace/search?' + new URLSearchParams({ run: new URLSearchParams(location.search).get('run') || '', q: 'multiply_add_fusion.2', limit: '1' }));
      return (await r.json()).hits[0];
    });
    assert.ok(hit, 'the demo has multiply_add_fusion.2');
    await page.evaluate(({ track, index }) => window.xlensTrace.select(track, index), hit);
    await page.waitForSelector('#tv-details a.tv-graph');
    const href = await page.getAttribute('#tv-details a.tv-graph', 'href');
    assert.match(href, /tool=graph_viewer/);
    assert.match(href, /op=multiply_add_fusion\.2/);
    assert.match(href, /module=jit_adam_update/);

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'trace_viewer.png') });
    console.log(`drew ${drawn} boxes; median frame ${drawMs} ms at 1920x1080; clicked "${target.name}"; screenshot in ${artifacts}`);
    assert.deepEqual(errors, []);
    await page.goto(new URL(href, page.url()).toString());
    const graph = await page.textContent('main');
    assert.match(graph, /multiply_add_fusion\.2/);
    assert.match(graph, /jit_adam_update/);
  } finally {
    await browser.close();
    server.kill();
  }
});
