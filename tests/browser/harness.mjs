// Shared by the browser tests: where the binary and the browser are, starting `xlens serve`, and
// launching Debian's chromium the way this machine allows (no sandbox, no background networking).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const bin = process.env.XLENS_BIN || join(here, '../../target/debug/xlens');
export const browserPath = process.env.CHROMIUM || '/usr/bin/chromium';
export const artifacts = process.env.XLENS_ARTIFACTS || join(here, '../../target/browser-artifacts');
export const fixturesLogdir = join(here, '../../fixtures/logdir');
export const noBrowser = !existsSync(browserPath) && `no browser at ${browserPath}`;

/** Starts `xlens serve [logdir]` on `port` (with `--token token` when given) and waits until it
 * answers. */
export async function startServer(port, logdir, token) {
  const args = ['serve', ...(logdir ? [logdir] : []), '--bind', `127.0.0.1:${port}`, ...(token ? ['--token', token] : [])];
  const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/api/runs`, { headers });
      if (r.ok) return proc;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill();
  throw new Error('xlens serve did not start');
}

export function launch() {
  return chromium.launch({
    executablePath: browserPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
