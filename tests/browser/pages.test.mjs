// The server-rendered pages in a real browser, over the fixture log dir: the overview's step
// chart shows a step's numbers on hover, the op profile's tables sort by value and page, and the
// graph viewer opens on a list of modules whose ops draw when clicked. Needs Debian's chromium
// and an xlens binary (see trace.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, bin, fixturesLogdir, launch, noBrowser, startServer } from './harness.mjs';

const port = 20700 + (process.pid % 1000);

test('overview chart hover, sortable paged tables, graph viewer landing', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, fixturesLogdir);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    mkdirSync(artifacts, { recursive: true });

    // Overview: hovering the chart shows the step under the mouse.
    await page.goto(`http://127.0.0.1:${port}/?run=jax_mlp_small&tool=overview_page`);
    const data = JSON.parse(await page.textContent('script.sc-data'));
    const box = await page.locator('svg.sc-chart').boundingBox();
    // The plot spans x = 78..988 of 1000 SVG units; aim at the middle of the third step.
    const x = box.x + box.width * (78 + (2.5 * 910) / data.names.length) / 1000;
    await page.mouse.move(x, box.y + box.height * 0.6);
    await page.waitForSelector('.sc-tip:not([hidden])');
    assert.equal(await page.getAttribute('.sc-tip', 'data-step'), '2');
    assert.ok((await page.textContent('.sc-tip')).includes(data.names[2]));
    await page.screenshot({ path: join(artifacts, 'overview.png') });

    // Op profile: a leaf table sorts by the time's value (largest first) and pages.
    await page.goto(`http://127.0.0.1:${port}/?run=jax_mlp_small&tool=op_profile&group=category`);
    const table = page.locator('table.paged').first();
    await table.locator('th', { hasText: /^Time$/ }).click();
    const times = await table.locator('tbody tr:not([hidden]) td:nth-child(2)').evaluateAll((tds) => tds.map((td) => +td.dataset.v));
    assert.ok(times.length > 1, 'rows shown');
    assert.deepEqual(times, [...times].sort((a, b) => b - a), 'largest first');
    assert.ok((await page.locator('div.pager').first().textContent()).startsWith('rows 1–'));

    // Graph viewer: opens on modules and their ops; clicking one draws it.
    await page.goto(`http://127.0.0.1:${port}/?run=jax_mlp_small&tool=graph_viewer`);
    const first = page.locator('ol.graph-modules a[data-op]').first();
    const op = await first.getAttribute('data-op');
    assert.ok(await page.locator('datalist#graph-ops option').count() > 0, 'suggestions');
    await Promise.all([page.waitForURL(new RegExp(`op=${op}`)), first.click()]);
    await page.waitForSelector('.graph-svg svg');
    await page.screenshot({ path: join(artifacts, 'graph_viewer.png') });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.kill();
  }
});
