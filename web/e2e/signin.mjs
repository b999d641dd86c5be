// Browser test of two ferry instances on one host (docs/live.md,
// "Authentication"): Playwright driving headless Chromium against two real
// `ferry up` on two loopback ports. One browser profile sends 127.0.0.1's
// cookies to both ports, as every browser does. Signed in to A and then
// to B, A stays signed in, also after a reload; each master has its own
// cookie. When a sign-in really ends the page says why: revoked (the Go
// test revokes the look's UI token on A) or this browser's key gone (B's
// localStorage cleared). On a phone's and a desktop's screen, dark and
// light.
// Started by web/signin_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { cfg, control, log, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

const opts = {
  'phone-dark': { viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true },
  'phone-light': { viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true },
  'desktop-dark': { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' },
  'desktop-light': { viewport: { width: 1280, height: 800 }, colorScheme: 'light' },
};

const connected = (page) => page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });

await main(async (browser) => {
  for (const look of cfg.looks) {
    const ctx = await browser.newContext(opts[look]);
    ctx.setDefaultTimeout(WAIT);
    const a = await ctx.newPage();
    const b = await ctx.newPage();
    watch(a, `${look} A`);
    watch(b, `${look} B`);

    await step(`${look}: sign in to A, then to B on another port`, async () => {
      await a.goto(cfg.logins.a[look]);
      await connected(a);
      await b.goto(cfg.logins.b[look]);
      await connected(b);
    });

    await step(`${look}: A stays signed in, after a reload too; one cookie per master`, async () => {
      await a.reload();
      // On main the second sign-in replaced A's cookie: A's upgrade is
      // refused and it shows "Signed out" within a few seconds.
      const outcome = await Promise.race([
        connected(a).then(() => 'connected'),
        a.getByRole('heading', { name: 'Signed out' }).waitFor().then(() => 'signed out'),
      ]);
      assert.equal(outcome, 'connected', 'A signed out by the sign-in to B');
      await a.waitForTimeout(1500); // a refused upgrade would show by now
      assert.equal(await a.getByRole('heading', { name: 'Signed out' }).count(), 0);
      await b.reload();
      await connected(b);
      const cookies = (await ctx.cookies(cfg.a)).filter((c) => c.name.startsWith('ferry_session'));
      log(`${look}: cookies ${cookies.map((c) => c.name).join(', ')}`);
      assert.equal(new Set(cookies.map((c) => c.name)).size, 2, 'one cookie per master');
      for (const c of cookies) assert.ok(c.httpOnly && c.sameSite === 'Strict' && c.name !== 'ferry_session', JSON.stringify(c));
    });

    await step(`${look}: a revoked sign-in says it was revoked`, async () => {
      assert.equal(await control(`/revoke?master=a&look=${look}`), '1');
      await a.reload();
      await a.getByRole('heading', { name: 'Signed out' }).waitFor();
      const why = a.locator('.signin-reason');
      assert.match(await why.innerText(), /was revoked/);
      assert.equal(await a.locator('section.signin').getAttribute('data-reason'), 'revoked');
      await shot(a, `${look}-signed-out-revoked`);
    });

    await step(`${look}: a key gone from this browser says so; B's cookie still there`, async () => {
      await b.evaluate(() => localStorage.removeItem('ferry.key'));
      await b.reload();
      await b.getByRole('heading', { name: 'Signed out' }).waitFor();
      assert.match(await b.locator('.signin-reason').innerText(), /key for the sign-in is gone/);
      assert.equal(await b.locator('section.signin').getAttribute('data-reason'), 'key_gone');
      await shot(b, `${look}-signed-out-key-gone`);
    });
    await ctx.close();
  }
});
