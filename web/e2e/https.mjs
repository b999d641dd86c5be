// Browser test of ferry over HTTPS (issue 33; docs/reach.md): headless
// Chromium trusting the test's own CA (an NSS database under the HOME it
// is started with, web/https_test.go), reaching the master at a name that
// is not localhost (mapped to 127.0.0.1 by --host-resolver-rules). Over
// HTTPS: the login signs in with a Secure cookie, the service worker
// registers and controls the page, and Chromium reports no installability
// error (CDP Page.getInstallabilityErrors) and a manifest that parses.
// Over plain HTTP at the same name (the control): no secure context, no
// service worker, and Chromium says why the app is not installable.
// Started by web/https_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { cfg, log, main, shot, step, watch } from './harness.mjs';

const WAIT = 20000;

// A persistent profile: Chromium installs no app from an incognito context.
await main(async (ctx) => {
  ctx.setDefaultTimeout(WAIT);
  const page = ctx.pages()[0] || await ctx.newPage();
  watch(page, 'https');

  await step('over HTTPS: the login signs in; the cookie is Secure', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    assert.equal(new URL(page.url()).origin, cfg.https);
    assert.equal(await page.evaluate(() => window.isSecureContext), true);
    const cookies = (await ctx.cookies(cfg.https)).filter((c) => c.name.startsWith('ferry_session'));
    assert.ok(cookies.length > 0, 'no session cookie');
    for (const c of cookies) assert.ok(c.secure && c.httpOnly, `cookie not Secure and HttpOnly: ${JSON.stringify(c)}`);
  });

  await step('over HTTPS: the service worker registers and controls the page', async () => {
    const url = await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.active.scriptURL));
    assert.equal(url, `${cfg.https}/sw.js`);
    await page.reload();
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
    log(`controlled by ${await page.evaluate(() => navigator.serviceWorker.controller.scriptURL)}`);
  });

  await step('over HTTPS: the app is installable', async () => {
    const cdp = await ctx.newCDPSession(page);
    const manifest = await cdp.send('Page.getAppManifest');
    assert.equal(manifest.url, `${cfg.https}${new URL(manifest.url).pathname}`);
    assert.deepEqual(manifest.errors, [], `manifest errors: ${JSON.stringify(manifest.errors)}`);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    log(`installability errors over HTTPS: ${JSON.stringify(installabilityErrors)}`);
    assert.deepEqual(installabilityErrors, []);
    await shot(page, 'https-installable');
  });

  await step('the control, plain HTTP at the same name: no service worker, not installable', async () => {
    const p = await ctx.newPage();
    await p.goto(cfg.http);
    await p.locator('#app').waitFor({ state: 'attached' });
    assert.equal(await p.evaluate(() => window.isSecureContext), false);
    assert.equal(await p.evaluate(() => 'serviceWorker' in navigator), false);
    const cdp = await ctx.newCDPSession(p);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    log(`installability errors over plain HTTP: ${installabilityErrors.map((e) => e.errorId).join(', ')}`);
    assert.ok(installabilityErrors.length > 0, 'plain HTTP reported installable');
    await p.close();
  });
}, {
  args: [`--host-resolver-rules=MAP ${cfg.host} 127.0.0.1`],
  env: { HOME: cfg.home },
  profile: cfg.profile,
  context: { viewport: { width: 1280, height: 800 } },
});
