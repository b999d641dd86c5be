// Browser test of the Notifications switch when no push service answers
// (docs/notifications.md, "The switch always settles"): Playwright driving
// headless Chromium against a real `ferry up`, with notifications allowed
// and Chromium's push service (GCM) pointed at a loopback server that
// accepts connections and never answers (web/notifysettle_test.go), so
// that the real pushManager.subscribe hangs. Turned on, the switch must
// settle within 15 s to off, saying why, on a phone's and a desktop's
// screen, dark and light. Each look runs in its own persistent profile:
// Chromium refuses push at once in an incognito context (what
// browser.newContext makes), which would hide the hang.
// Started by web/notifysettle_test.go, which passes a config file.

import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { cfg, log, problems, shot, step, watch } from './harness.mjs';

const SETTLE = 15000; // what docs/notifications.md promises, from the click

const looks = [
  { name: 'phone-dark', viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true },
  { name: 'phone-light', viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true },
  { name: 'desktop-dark', viewport: { width: 1280, height: 800 }, colorScheme: 'dark' },
  { name: 'desktop-light', viewport: { width: 1280, height: 800 }, colorScheme: 'light' },
];

const profiles = await fs.mkdtemp(path.join(os.tmpdir(), 'ferry-notify-'));
// The four run side by side: each may wait its whole 15 s.
const results = await Promise.allSettled(looks.map((look, i) => step(`${look.name}: the switch settles to off within 15 s, saying why`, async () => {
    const { name, ...opts } = look;
    const ctx = await chromium.launchPersistentContext(path.join(profiles, name), {
      ...opts, executablePath: cfg.chromium,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', ...cfg.chromiumArgs],
    });
    ctx.setDefaultTimeout(20000);
    await ctx.grantPermissions(['notifications'], { origin: cfg.base });
    const page = ctx.pages()[0] || await ctx.newPage();
    watch(page, name);
    await page.goto(cfg.logins[i]);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.evaluate(() => navigator.serviceWorker.ready);
    const sw = page.locator('#notify-switch');
    const status = page.locator('#notify-status');
    await sw.waitFor();
    assert.equal(await sw.isChecked(), false);
    const t0 = Date.now();
    await sw.click();
    await page.waitForFunction(() => document.getElementById('notify-status')?.dataset.state === 'busy', null, { timeout: 5000 })
      .catch(() => {}); // it may fail at once on a browser without a push service: then it settled, which is fine
    let settled = false;
    try {
      await page.waitForFunction(() => document.getElementById('notify-status')?.dataset.state !== 'busy', null, { timeout: SETTLE + 5000 });
      settled = true;
    } catch {
      settled = false;
    }
    const took = Date.now() - t0;
    const text = await status.innerText();
    log(`${name}: settled=${settled} after ${took} ms: ${JSON.stringify(text)}`);
    assert.ok(settled, `${name}: the switch still says ${JSON.stringify(text)} after ${took} ms`);
    assert.ok(took <= SETTLE, `${name}: took ${took} ms, more than the ${SETTLE} ms promised`);
    assert.equal(await sw.isChecked(), false, `${name}: the switch is on although nothing subscribed`);
    assert.equal(await sw.isDisabled(), false, `${name}: the switch stays disabled`);
    assert.equal(await status.getAttribute('data-state'), 'error');
    assert.match(text, /push service/i, `${name}: the message does not say why: ${text}`);
    await shot(page, `${name}-notifications-no-push-service`);
    await ctx.close();
  })));
await fs.rm(profiles, { recursive: true, force: true });
if (problems.length) console.log(`problems in the pages:\n  ${problems.join('\n  ')}`);
const failed = results.some((r) => r.status === 'rejected') || problems.length > 0;
log(failed ? 'the browser tests failed' : 'the browser tests passed');
process.exit(failed ? 1 : 0);
