// Browser test of session names and previews (issue 32): Playwright
// (playwright-core) driving headless Chromium against a real `ferry up`
// whose script agent answers every prompt with a fixed line. On a phone
// (390×844) and a desktop (1280×800), dark and light, it checks that a
// session started without a title is named from its first prompt at once
// (cleaned: no Markdown marks), that its row shows a one-line preview of
// the agent's answer, that a search says why a session matched (title,
// prompt or answer) with the match marked, that a session opened and left
// without a word is not kept ("New session" / "Untitled session" clutter),
// and that opening a session does not change the list's order nor its
// "N min ago". Each screenshot is audited with axe-core's WCAG 2.1 AA
// rules. Started by web/titles_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { audit, cfg, main, screenshot, step, until, watch } from './harness.mjs';

const WAIT = 15000;

const rows = (page) => page.locator('.sidebar a.session-link');
const row = (page, id) => page.locator(`.sidebar a.session-link[data-session="${id}"]`);
const sessionID = (page) => decodeURIComponent(new URL(page.url()).hash.replace('#/s/', ''));

/** startBlank starts a session with no title and returns its id. */
async function startBlank(page) {
  await page.goto(`${cfg.base}/#/new`);
  await page.locator(`#ns-agent option[value="${cfg.agent}"]`).waitFor({ state: 'attached' });
  await page.locator('#ns-agent').selectOption(cfg.agent);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//, { timeout: WAIT });
  await page.locator('#prompt').waitFor();
  return sessionID(page);
}

/** listed is the ids of the session rows in the list, in order. */
async function listed(page) {
  return rows(page).evaluateAll((as) => as.map((a) => a.dataset.session));
}

/** home shows the sessions list (the sidebar; a phone's whole screen). */
async function home(page) {
  await page.goto(`${cfg.base}/#/`);
  await rows(page).first().waitFor();
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'titles');
  await page.goto(cfg.login);
  await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });

  const combos = [
    { name: 'phone-dark', width: 390, height: 844, scheme: 'dark' },
    { name: 'phone-light', width: 390, height: 844, scheme: 'light' },
    { name: 'desktop-dark', width: 1280, height: 800, scheme: 'dark' },
    { name: 'desktop-light', width: 1280, height: 800, scheme: 'light' },
  ];
  const made = [];
  for (const [i, f] of combos.entries()) {
    const P = (s) => `${f.name}: ${s}`;
    await page.setViewportSize({ width: f.width, height: f.height });
    await page.emulateMedia({ colorScheme: f.scheme });
    const word = `walrus${i}`;
    let id = '';

    await step(P('a session without a title is named from its first prompt'), async () => {
      id = await startBlank(page);
      await page.locator('#prompt').click();
      await page.keyboard.type(`# Fix the **${word}** bug in \`login.go\``);
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('and tell me what you changed');
      await page.keyboard.press('Enter');
      await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
      made.unshift(id);
      await home(page);
      await row(page, id).locator('.session-name', { hasText: `Fix the ${word} bug in login.go` }).waitFor();
      assert.equal((await row(page, id).locator('.session-name').textContent()).trim(), `Fix the ${word} bug in login.go`);
    });

    await step(P('the row previews the last message on one line'), async () => {
      const pv = row(page, id).locator('.session-preview');
      await pv.waitFor();
      assert.match(await pv.textContent(), /the zebra report is ready/);
      const box = await pv.boundingBox();
      const lh = await pv.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || el.getBoundingClientRect().height);
      assert.ok(box.height <= lh * 1.5, `the preview wraps: ${box.height}px for a ${lh}px line`);
    });

    await step(P('a session opened and left without a word is not kept'), async () => {
      const before = await listed(page);
      const blank = await startBlank(page);
      await home(page);
      await until('the empty session to go', async () => !(await listed(page)).includes(blank), WAIT);
      assert.deepEqual(await listed(page), before);
      const names = await rows(page).locator('.session-name').allTextContents();
      assert.ok(!names.some((n) => /Untitled session|^New session$/.test(n.trim())), `clutter in the list: ${names}`);
    });

    await step(P('opening a session changes neither the order nor its time'), async () => {
      const order = await listed(page);
      assert.deepEqual(order, made);
      const last = order[order.length - 1];
      const when = await row(page, last).locator('.session-sub').textContent();
      await row(page, last).click();
      await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
      await home(page);
      assert.deepEqual(await listed(page), order);
      assert.equal(await row(page, last).locator('.session-sub').textContent(), when);
    });

    await step(P('a search says why each session matched'), async () => {
      await page.locator('#session-search').fill(word);
      const hit = page.locator(`.sessions.found a.session-link[data-session="${id}"] .session-match`);
      await hit.waitFor();
      assert.equal(await hit.getAttribute('data-field'), 'title');
      assert.equal((await hit.locator('mark').textContent()).toLowerCase(), word);
      await page.locator('#session-search').fill('tell me what you');
      const p = page.locator(`.sessions.found a.session-link[data-session="${id}"] .session-match[data-field="prompt"]`);
      await p.waitFor();
      assert.equal(await p.locator('mark').textContent(), 'tell me what you');
      await page.locator('#session-search').fill('ZEBRA REPORT');
      const a = page.locator(`.sessions.found a.session-link[data-session="${id}"] .session-match[data-field="answer"]`);
      await a.waitFor();
      assert.equal(await a.locator('mark').textContent(), 'zebra report');
      await audit(page, `titles-search-${f.name}`);
      await screenshot(page, `titles-search-${f.name}`);
      await page.locator('#session-search').fill('');
      await page.locator('.sessions.found').waitFor({ state: 'detached' });
      await audit(page, `titles-list-${f.name}`);
      await screenshot(page, `titles-list-${f.name}`);
    });
  }
});
