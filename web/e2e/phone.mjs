// Browser test of "Open on your phone" (docs/ui.md): Playwright driving
// headless Chromium against a real `ferry up`. Signed in on a desktop's
// (1280×800) and a phone's (390×844) screen, the top bar's button opens a
// dialog with a fresh login link as a QR code, the link as text and when
// it expires. The QR code, read back from a screenshot by jsQR (an
// independent decoder, pinned in web/package.json), is the link shown, and
// that link signs a second browser context in, once.
// Started by web/phone_test.go, which passes a config file.

import assert from 'node:assert/strict';
import jsQR from 'jsqr';
import { cfg, log, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

const opts = {
  desktop: { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' },
  phone: { viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true },
};

const connected = (page) => page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });

/**
 * decodeQR reads the QR code in png (a screenshot) with jsQR. The PNG is
 * turned into pixels in a blank page of browser (no policy there), the
 * decoding happens here.
 */
async function decodeQR(browser, png) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const { w, h, data } = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return { w: c.width, h: c.height, data: Array.from(g.getImageData(0, 0, c.width, c.height).data) };
  }, png.toString('base64'));
  await ctx.close();
  const code = jsQR(Uint8ClampedArray.from(data), w, h);
  assert.ok(code, 'jsQR found no QR code in the dialog');
  return code.data;
}

await main(async (browser) => {
  for (const look of cfg.looks) {
    const ctx = await browser.newContext(opts[look]);
    ctx.setDefaultTimeout(WAIT);
    const page = await ctx.newPage();
    watch(page, look);
    let link = '';

    await step(`${look}: sign in, open "Open on your phone"`, async () => {
      await page.goto(cfg.logins[look]);
      await connected(page);
      const btn = page.getByRole('button', { name: 'Open on your phone' });
      assert.ok(await btn.isVisible(), 'no "Open on your phone" in the top bar');
      await btn.click();
      await page.locator('#phone-qr svg').waitFor();
      link = await page.locator('#phone-url').inputValue();
      assert.match(link, new RegExp(`^${cfg.base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/login\\?token=ferry_login_`));
      assert.match(await page.locator('#phone-expiry').innerText(), /^Works once, until .*\(in (9|10) min\)\.$/);
      // ferry up listens on 127.0.0.1 here: the dialog says a phone cannot open it.
      assert.match(await page.locator('#phone-note').innerText(), /a phone cannot open/);
      await shot(page, `${look}-open-on-phone`);
    });

    await step(`${look}: the QR code reads as the link shown`, async () => {
      const png = await page.locator('#phone-qr svg').screenshot();
      const read = await decodeQR(browser, png);
      log(`${look}: QR reads ${read.slice(0, 60)}…`);
      assert.equal(read, link);
    });

    await step(`${look}: the link signs a second browser in, once`, async () => {
      const other = await browser.newContext(opts[look]);
      other.setDefaultTimeout(WAIT);
      const p2 = await other.newPage();
      watch(p2, `${look} second`);
      await p2.goto(link);
      await connected(p2);
      await other.close();
      const third = await browser.newContext(opts[look]);
      const p3 = await third.newPage();
      await p3.goto(link);
      // A used link signs nobody in: the page says so, no UI connects.
      await p3.waitForTimeout(1000);
      assert.equal(await p3.locator('.conn-pill[data-state="open"]').count(), 0, 'a used link signed a third browser in');
      await third.close();
    });

    await step(`${look}: New link gives another one; Close closes`, async () => {
      await page.locator('#phone-new').click();
      await page.waitForFunction((old) => {
        const v = document.querySelector('#phone-url')?.value;
        return v && v !== old;
      }, link);
      await page.locator('#phone-close').click();
      await page.locator('#phone-dialog').waitFor({ state: 'hidden' });
    });
    await ctx.close();
  }
});
