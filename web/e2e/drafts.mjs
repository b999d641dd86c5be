// Browser test of drafts (docs/ui.md, "Drafts"): Playwright driving
// headless Chromium against a real `ferry up` (ferry's agent on a fake
// model). What the prompt box holds (text and an uploaded file) survives a
// reload and a closed tab; a prompt the master refuses stays the draft; a
// prompt it accepts is a draft no more. On a phone's and a desktop's
// screen, dark and light.
// Started by web/drafts_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { cfg, control, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;
const NOTES = 'NOTES: the totals are in column C.\n';

const opts = {
  'phone-dark': { viewport: { width: 390, height: 844 }, colorScheme: 'dark', isMobile: true, hasTouch: true },
  'phone-light': { viewport: { width: 390, height: 844 }, colorScheme: 'light', isMobile: true, hasTouch: true },
  'desktop-dark': { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' },
  'desktop-light': { viewport: { width: 1280, height: 800 }, colorScheme: 'light' },
};

const promptText = (page) => page.locator('#prompt').evaluate((el) => el.innerText.replace(/\u00a0/g, ' ').trim());
const stored = (page, sid) => page.evaluate((id) => localStorage.getItem(`ferry.draft.${id}`), sid);

await main(async (browser) => {
  for (const look of cfg.looks) {
    const ctx = await browser.newContext(opts[look]);
    ctx.setDefaultTimeout(WAIT);
    let page = await ctx.newPage();
    watch(page, look);
    let url = '';
    let sid = '';
    const text = `keep this draft (${look})\nand its second line`;

    await step(`${look}: sign in and start a session`, async () => {
      await page.goto(cfg.logins[look]);
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.goto(`${cfg.base}/#/new`);
      await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
      await page.locator('#ns-agent').selectOption('builtin');
      await page.locator('#ns-title').fill(`Drafts ${look}`);
      await page.getByRole('button', { name: 'Start session' }).click();
      await page.waitForURL(/#\/s\//);
      url = page.url();
      sid = decodeURIComponent(new URL(url).hash.replace(/^#\/s\//, ''));
    });

    await step(`${look}: typed text and an uploaded file survive a reload`, async () => {
      await page.locator('#prompt').click();
      await page.keyboard.type('keep this draft (' + look + ')');
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('and its second line');
      await page.locator('input.file-input[multiple]').setInputFiles([{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(NOTES) }]);
      await page.locator('.attachment[data-name="notes.txt"][data-state="done"]').waitFor();
      await page.waitForTimeout(600); // the draft is saved within 250 ms of a change
      await page.reload();
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.locator('#prompt').waitFor();
      assert.equal(await promptText(page), text, 'the text after a reload');
      await page.locator('.attachment[data-name="notes.txt"][data-state="done"]').waitFor({ timeout: 3000 });
      await shot(page, `${look}-draft-restored`);
    });

    await step(`${look}: and a closed tab (a discarded one comes back the same way)`, async () => {
      await page.close();
      page = await ctx.newPage();
      watch(page, `${look} new tab`);
      await page.goto(url);
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.locator('.attachment[data-name="notes.txt"][data-state="done"]').waitFor({ timeout: 3000 });
      assert.equal(await promptText(page), text);
    });

    if (look === cfg.looks[0]) {
      await step(`${look}: and a restart of ferry`, async () => {
        assert.equal(await control('/restart'), cfg.base);
        await page.reload();
        await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached', timeout: 30000 });
        await page.locator('.attachment[data-name="notes.txt"][data-state="done"]').waitFor({ timeout: 3000 });
        assert.equal(await promptText(page), text);
      });
    }

    await step(`${look}: a prompt the master refuses stays the draft`, async () => {
      // The draft's upload made unknown, from the sessions list (the
      // session's own page would save its box over it when it goes): the
      // master refuses the prompt.
      await page.evaluate(() => { location.hash = '#/'; });
      await page.waitForURL((u) => !u.hash.startsWith('#/s/'));
      await page.evaluate((id) => {
        const k = `ferry.draft.${id}`;
        const d = JSON.parse(localStorage.getItem(k));
        d.files[0].upload_id = `${d.files[0].upload_id.slice(0, -4)}zzzz`;
        localStorage.setItem(k, JSON.stringify(d));
      }, sid);
      await page.goto(url);
      await page.reload();
      await page.locator('.attachment[data-name="notes.txt"][data-state="done"]').waitFor();
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.locator('button.send').click();
      await page.locator('.attach-note', { hasText: 'back in the box' }).waitFor().catch(async (e) => {
        const note = await page.locator('.attach-note').innerText().catch(() => '?');
        const user = await page.locator('article.msg.user').allInnerTexts();
        throw new Error(`no refusal: note ${JSON.stringify(note)}, prompts ${JSON.stringify(user)}, box ${JSON.stringify(await promptText(page))}: ${e.message}`);
      });
      await page.waitForTimeout(600);
      assert.ok(await stored(page, sid), 'the refused prompt is still the draft');
      await page.reload();
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.waitForFunction((t) => document.getElementById('prompt')?.innerText.trim() === t, text, { timeout: 5000 });
      // The refused upload is not kept: the master does not know it.
      assert.equal(await page.locator('.attachment').count(), 0);
    });

    await step(`${look}: a prompt the master accepts is a draft no more`, async () => {
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.locator('button.send').click();
      await page.locator('article.msg.agent[data-state="done"]').waitFor();
      await page.waitForTimeout(600);
      assert.equal(await stored(page, sid), null, 'the draft of an accepted prompt is gone');
      await page.reload();
      await page.locator('article.msg.agent[data-state="done"]').waitFor();
      await page.waitForTimeout(300);
      assert.equal(await promptText(page), '', 'the box is empty after a reload');
      assert.equal(await page.locator('.attachment').count(), 0);
    });
    await ctx.close();
  }
});
