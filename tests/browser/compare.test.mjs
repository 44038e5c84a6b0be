// "Compare with" and the advice links in a real browser, over the fixture log dir: choosing a
// baseline in the nav reloads the overview with `base=` and the comparison panel above it; its
// tables sort by the delta column; the advice's trace link opens the trace viewer on that step's
// window (`start_ps`/`end_ps`). Needs Debian's chromium and an xlens binary (see trace.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, bin, fixturesLogdir, launch, noBrowser, startServer } from './harness.mjs';

const port = 20700 + (process.pid % 1000);

test('compare with: selector navigates with base=, panel sorts by delta; advice links to the step trace', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, fixturesLogdir);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/?run=jax_tfm_small&tool=overview_page`);
    assert.equal(await page.$('section.diff'), null, 'no panel without a baseline');

    // Choosing a baseline navigates to the deep link.
    await Promise.all([
      page.waitForURL(/base=jax_mlp_small/),
      page.selectOption('select[name=base]', 'jax_mlp_small'),
    ]);
    await page.waitForSelector('section.diff');
    assert.match(await page.textContent('section.diff h2'), /jax_mlp_small/);
    assert.equal(await page.inputValue('select[name=base]'), 'jax_mlp_small');

    // The ops table sorts by its Delta column (tables.js): after two clicks, descending.
    const table = 'section.diff table:last-of-type';
    const deltaCol = await page.$$eval(`${table} thead th`, (ths) => ths.findIndex((t) => t.textContent.trim() === 'Delta'));
    assert.ok(deltaCol >= 0, 'a Delta column');
    const values = () => page.$$eval(`${table} tbody tr`, (rows, c) => rows.map((r) => Number(r.children[c].dataset.v)), deltaCol);
    const th = `${table} thead th:nth-child(${deltaCol + 1})`;
    await page.click(th);
    const first = await values();
    await page.click(th);
    const second = await values();
    const sortedAsc = [...first].sort((a, b) => a - b);
    const sortedDesc = [...first].sort((a, b) => b - a);
    assert.ok(
      (JSON.stringify(first) === JSON.stringify(sortedAsc) && JSON.stringify(second) === JSON.stringify(sortedDesc))
      || (JSON.stringify(first) === JSON.stringify(sortedDesc) && JSON.stringify(second) === JSON.stringify(sortedAsc)),
      'sorted by delta both ways',
    );

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'compare.png'), fullPage: false });

    // The advice's trace link opens the trace viewer on that step.
    const href = await page.getAttribute('p.advice + p a[href*="tool=trace_viewer"]', 'href');
    assert.ok(href && /start_ps=\d+/.test(href) && /end_ps=\d+/.test(href), href);
    const u = new URL(href, `http://127.0.0.1:${port}`);
    const [s0, s1] = [Number(u.searchParams.get('start_ps')), Number(u.searchParams.get('end_ps'))];
    const asked = page.waitForRequest((r) => r.url().includes('/api/trace/viewport'));
    await page.goto(u.toString());
    const req = new URL((await asked).url());
    assert.equal(Number(req.searchParams.get('start_ps')), s0);
    assert.equal(Number(req.searchParams.get('end_ps')), s1);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.kill();
  }
});
