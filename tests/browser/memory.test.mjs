// The memory viewer in a real browser, over the fixture log dir: hovering a buffer's bar
// highlights its table row, clicking pins a details panel holding the buffer's shape that stays
// when the mouse moves and when the panel's text is clicked, and the module selector reloads the
// page with `module=`. Needs Debian's chromium and an xlens binary (see trace.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, bin, fixturesLogdir, launch, noBrowser, startServer } from './harness.mjs';

const port = 19700 + (process.pid % 1000);

test('memory viewer: hover highlights, click pins copyable details, module selector navigates', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, fixturesLogdir);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`http://127.0.0.1:${port}/?run=jax_mlp_small&tool=memory_viewer&module=jit_mlp_loss`);
    const data = JSON.parse(await page.textContent('script.mv-data'));
    assert.ok(data.length > 0, 'buffers at the peak');
    const b = data[0];

    // Hover: the bar and its row light up together.
    await page.hover('rect.mv-bar[data-b="0"]');
    await page.waitForSelector('tr[data-b="0"].hi');

    // Click: the details panel holds the buffer's shape and instruction.
    await page.click('rect.mv-bar[data-b="0"]');
    await page.waitForFunction(() => document.querySelector('.mv-details').dataset.pinned === '0');
    const shape = await page.textContent('.mv-details .mv-d-shape');
    assert.equal(shape, b.shape);
    assert.ok((await page.textContent('.mv-details')).includes(b.instruction));

    // It stays when the mouse moves away and when its own text is clicked; text is selectable.
    await page.mouse.move(5, 5);
    await page.click('.mv-details .mv-d-shape');
    assert.equal(await page.textContent('.mv-details .mv-d-shape'), b.shape);
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.querySelector('.mv-details')).userSelect), 'none');
    const selected = await page.evaluate(() => {
      const r = document.createRange();
      r.selectNodeContents(document.querySelector('.mv-details .mv-d-shape'));
      const s = window.getSelection();
      s.removeAllRanges();
      s.addRange(r);
      return s.toString();
    });
    assert.equal(selected, b.shape);

    // A table row pins too, replacing the previous details.
    if (data.length > 1) {
      await page.click('tr[data-b="1"]');
      await page.waitForFunction(() => document.querySelector('.mv-details').dataset.pinned === '1');
      assert.equal(await page.textContent('.mv-details .mv-d-shape'), data[1].shape);
    }

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'memory_viewer.png') });

    // The module selector reloads with module=.
    const other = await page.evaluate(() => [...document.querySelectorAll('select.mv-module option')].map((o) => o.value).find((v) => v.startsWith('jit_adam_update')));
    assert.ok(other, 'jit_adam_update listed');
    await Promise.all([page.waitForURL(/module=jit_adam_update/), page.selectOption('select.mv-module', other)]);
    assert.equal(await page.inputValue('select.mv-module'), other);
    assert.ok(await page.locator('svg.mv-chart').count() > 0);
    console.log(`pinned ${b.instruction} ${b.shape}; screenshot in ${artifacts}`);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.kill();
  }
});
