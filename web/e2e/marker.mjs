// Browser test of an artifact card's "changed since" note: Playwright
// (playwright-core) driving headless Chromium against a real `ferry up`
// whose script agent writes out/report.txt from each prompt. With the
// artifact snapshots on (cfg.snapshots), the first card still downloads
// the agent's first version after the agent wrote the file again, with no
// note; with them off (--snapshot-total 0), it downloads the current file
// and says so. Started by web/marker_test.go, which passes a config file.

import fs from 'node:fs/promises';
import path from 'node:path';
import assert from 'node:assert/strict';
import { cfg, main, problems, step } from './harness.mjs';

const WAIT = 15000;
const NOTE = 'Changed since the agent made it';

const cards = (page) => page.locator('.turn-body .artifact');

async function prompt(page, text, n) {
  await page.locator('#prompt').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.locator('article.msg.agent[data-state="done"]').nth(n).waitFor();
  await cards(page).nth(n).waitFor();
}

async function download(page, card) {
  await page.waitForFunction((i) => document.querySelectorAll('.turn-body .artifact a.download')[i]?.getAttribute('href').startsWith('/v1/artifacts/'),
    await card.evaluate((c) => [...document.querySelectorAll('.turn-body .artifact')].indexOf(c)), { timeout: WAIT });
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: WAIT }), card.locator('a.download').click()]);
  const file = path.join(cfg.downloads, `${Date.now()}-${dl.suggestedFilename()}`);
  await dl.saveAs(file);
  return fs.readFile(file, 'utf8');
}

await main(async (browser) => {
  await fs.mkdir(cfg.downloads, { recursive: true });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const heads = [];
  page.on('request', (r) => {
    if (r.method() === 'HEAD' && r.url().includes('/v1/artifacts/')) heads.push(r.url());
  });

  await step('sign in and start a session with the script agent', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator(`#ns-agent option[value="${cfg.agent}"]`).waitFor({ state: 'attached' });
    await page.locator('#ns-agent').selectOption(cfg.agent);
    await page.locator('#ns-title').fill('Reports');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//, { timeout: WAIT });
  });

  if (cfg.snapshots) {
    await step('snapshots on: after the agent wrote the file again, the first card downloads the agent\'s first version, no note', async () => {
      await prompt(page, 'one', 0);
      await prompt(page, 'two', 1);
      assert.equal(await download(page, cards(page).nth(0)), 'report one\n', 'the first card downloads the first version');
      assert.equal(await download(page, cards(page).nth(1)), 'report two\n');
      await page.waitForTimeout(2500); // the checks after the downloads had their chance
      assert.equal(await page.getByText(NOTE).count(), 0, 'a note while the agent\'s versions are kept');
      assert.ok(heads.length >= 2, `the cards asked ${heads.length} times whether their files changed`);
    });
  } else {
    await step('the first report: its card has no note, and downloads the agent\'s bytes', async () => {
      await prompt(page, 'one', 0);
      const first = cards(page).nth(0);
      assert.equal(await download(page, first), 'report one\n');
      await page.waitForTimeout(2500); // the check after the download had its chance
      assert.equal(await first.getByText(NOTE).count(), 0, 'a note on an unchanged file');
      assert.ok(heads.length >= 1, 'the card never asked whether its file changed');
    });

    await step('the agent writes the file again: after a download the first card says so, the second does not', async () => {
      await prompt(page, 'two', 1);
      const [first, second] = [cards(page).nth(0), cards(page).nth(1)];
      assert.equal(await download(page, first), 'report two\n', 'the first card downloads the current file');
      await first.getByText(NOTE).waitFor();
      assert.equal(await second.getByText(NOTE).count(), 0, 'a note on the newest version');
    });

    await step('after a reload the cards in view ask again, and the note is back', async () => {
      const before = heads.length;
      await page.reload();
      await cards(page).nth(1).waitFor();
      await cards(page).nth(0).getByText(NOTE).waitFor();
      await page.waitForTimeout(500);
      assert.equal(await cards(page).nth(1).getByText(NOTE).count(), 0);
      assert.ok(heads.length - before <= 4, `HEAD requests after a reload: ${heads.length - before}`);
    });
  }
  await ctx.close();
});
