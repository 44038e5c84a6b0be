// PyTorch traces in a real browser (fixtures/pytorch/two_ranks, two ranks of one job): the trace
// viewer draws them, a cudaLaunchKernel's details list the flow to the kernel it launched and
// following it selects that kernel on its GPU stream; the temporal breakdown page shows HTA's
// figures for both ranks; long kernel names fold to two lines. Needs Debian's chromium and an xlens binary (see trace.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { artifacts, bin, launch, noBrowser, startServer } from './harness.mjs';

const port = 21700 + (process.pid % 1000);
const logdir = new URL('../../fixtures/pytorch', import.meta.url).pathname;

test('PyTorch trace: launch -> kernel flow in the trace viewer, HTA breakdown page', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  const server = await startServer(port, logdir);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    mkdirSync(artifacts, { recursive: true });

    await page.goto(`http://127.0.0.1:${port}/?run=two_ranks&host=rank0&tool=trace_viewer`);
    await page.waitForFunction(() => Number(document.getElementById('trace').dataset.drawn || 0) > 0);
    const hit = await page.evaluate(async () => {
      const r = await fetch('/api/trace/search?' + new URLSearchParams({ run: 'two_ranks', host: 'rank0', q: 'cudaLaunchKernel', limit: '1' }));
      return (await r.json()).hits[0];
    });
    assert.ok(hit, 'rank 0 has cudaLaunchKernel calls');
    await page.evaluate(({ track, index }) => window.xlensTrace.select(track, index), hit);
    await page.waitForSelector('#tv-details ul.tv-flows a[data-flow]');
    const flow = page.locator('#tv-details ul.tv-flows a[data-flow]').first();
    const kernel = await flow.textContent();
    assert.ok(kernel.length > 0);
    await flow.click();
    await page.waitForFunction((name) => document.getElementById('tv-details').dataset.name === name, kernel);
    assert.match(await page.textContent('#tv-details'), /Stream #/);
    await page.screenshot({ path: join(artifacts, 'pytorch-trace.png') });

    // HTA's temporal breakdown for both ranks (rank 0: 53.56 % idle, as HTA 0.5.0 computes it).
    await page.goto(`http://127.0.0.1:${port}/?run=two_ranks&tool=temporal_breakdown`);
    const rows = await page.locator('table.sortable tbody tr').allTextContents();
    assert.equal(rows.length, 2);
    assert.ok(rows[0].includes('rank0') && rows[0].includes('53.56'), rows[0]);
    assert.ok(rows[1].includes('rank1') && rows[1].includes('54.72'), rows[1]);

    // Kernel stats: a kernel's whole C++ signature (rank 0's longest runs to 1,956 characters)
    // shows two lines until clicked, and stays whole in the page for the filter.
    await page.goto(`http://127.0.0.1:${port}/?run=two_ranks&host=rank0&tool=kernel_stats`);
    const folded = page.locator('table.sortable td .clamp').first();
    await folded.waitFor();
    const name = await folded.textContent();
    assert.ok(name.length > 160 && name.startsWith('void '), name.slice(0, 80));
    const lineHeight = await folded.evaluate((d) => parseFloat(getComputedStyle(d).lineHeight));
    const closed = (await folded.boundingBox()).height;
    assert.ok(closed <= 2.5 * lineHeight, `folded: ${closed} px for lines of ${lineHeight} px`);
    await folded.click();
    const open = (await folded.boundingBox()).height;
    assert.ok(open > 3 * lineHeight, `unfolded: ${open} px`);
    await page.screenshot({ path: join(artifacts, 'pytorch-kernel-stats.png') });
    await folded.click();
    assert.equal((await folded.boundingBox()).height, closed);
    await page.fill('input.table-filter', 'GenericPackedTensorAccessor<long, 1ul');
    assert.ok((await page.locator('table.sortable tbody tr:not([hidden])').count()) > 0);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.kill();
  }
});
