// `xlens export --html`: the file opens from disk with every network request blocked (none is
// made), shows XProf's step count and step names (fixtures/expected/xprof/overview), the HLO op
// table with every row `xlens tool hlo_stats` has, and the trace viewer over the median step,
// where clicking an event shows its details from the embedded data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { artifacts, bin, fixturesLogdir, launch, noBrowser } from './harness.mjs';

const expected = JSON.parse(readFileSync(join(fixturesLogdir, '../expected/xprof/overview/jax_mlp_small.json'), 'utf8'));

test('an exported file works from disk without network', { skip: noBrowser }, async () => {
  assert.ok(existsSync(bin), `build xlens first (${bin})`);
  mkdirSync(artifacts, { recursive: true });
  const file = join(artifacts, 'export-jax_mlp_small.html');
  const ex = spawnSync(bin, ['export', fixturesLogdir, '--run', 'jax_mlp_small', '--html', file], { encoding: 'utf8' });
  assert.equal(ex.status, 0, ex.stderr);
  assert.match(ex.stderr, /the median step \(train 8\)/);
  const ops = JSON.parse(spawnSync(bin, ['tool', 'hlo_stats', fixturesLogdir, '--run', 'jax_mlp_small', '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout);
  const opRows = ops.hosts[0].rows;

  const browser = await launch();
  try {
    const ctx = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    const requests = [];
    await ctx.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith('file:')) return route.continue();
      requests.push(u);
      return route.abort();
    });
    const page = await ctx.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(pathToFileURL(file).href);

    // The overview's steps: XProf's count and names.
    const steps = await page.$$eval('#overview h3 + input + table.sortable tbody tr', (rows) => rows.map((r) => r.cells[1].textContent));
    assert.equal(steps.length, expected.step_count);
    assert.deepEqual(steps, expected.step_names);

    // The HLO op table: every op, the largest first.
    const names = await page.$$eval('#hlo_stats table.ops > tbody > tr', (rows) => rows.map((r) => r.cells[3].textContent));
    assert.deepEqual(names, opRows.map((r) => r.hlo_op_name));
    assert.ok(await page.isVisible('#memory_viewer svg, #memory_viewer table'));

    // The trace viewer: drawn from the embedded window; an event's details on click.
    await page.locator('#trace').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => Number(document.getElementById('trace').dataset.drawn || 0) > 0);
    const target = await page.evaluate(() => {
      const t = window.xlensTrace;
      const d = t.state.data;
      const es = d.events.filter((e) => { const y = t.rowY(e.track, e.depth); return y != null && y > 40 && y < 700 && t.xOf(e.start_ps) > 270; });
      es.sort((a, b) => b.dur_ps - a.dur_ps);
      const e = es[0];
      return { x: (Math.max(t.xOf(e.start_ps), 262) + t.xOf(e.start_ps + e.dur_ps)) / 2, y: t.rowY(e.track, e.depth), name: d.names[e.name], dur: e.dur_ps };
    });
    const box = await page.locator('#trace canvas').boundingBox();
    await page.mouse.click(box.x + target.x, box.y + target.y);
    await page.waitForFunction((name) => document.getElementById('tv-details').dataset.name === name, target.name);
    assert.equal(await page.textContent('#tv-details h3'), target.name);
    assert.match(await page.textContent('#tv-details'), /Duration/);
    await page.screenshot({ path: join(artifacts, 'export.png'), fullPage: false });
    assert.deepEqual(requests, [], 'the file made network requests');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
