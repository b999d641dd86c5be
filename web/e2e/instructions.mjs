// Browser test of project instructions and custom commands (issue 36
// items 2 and 8) on a phone: the session's settings name the instruction
// files in the agent's system prompt, and a command of .ferry/commands is
// picked from the `/` menu and run as a prompt. Playwright
// (playwright-core) drives headless Chromium against a real `ferry up`
// started by web/instructions_test.go
// (TestBrowserInstructionsAndCommands), which checks on the fake Anthropic
// server what the model got. Every wait is bounded.

import assert from 'node:assert/strict';
import { cfg, closeSettings, main, openSettings, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'instructions');
  await step('sign in on a phone and start a session of ferry\'s agent', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    if (!(await page.locator('#ns-agent').isVisible())) {
      await page.getByRole('link', { name: 'New session' }).first().tap();
      await page.locator('#ns-agent').waitFor();
    }
    await page.locator('#ns-title').fill('Review');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
  });
  await step('the settings name the instruction files, outermost first', async () => {
    const sheet = await openSettings(page);
    const list = sheet.locator('#session-instructions');
    await list.waitFor();
    const items = await list.locator('li code').allInnerTexts();
    assert.equal(items.length, 3, `files listed: ${JSON.stringify(items)}`);
    assert.ok(items[0].endsWith(cfg.files[0]), `the user's file first: ${items[0]}`);
    assert.deepEqual(items.slice(1), cfg.files.slice(1));
    assert.match(await list.innerText(), /\d+ B/);
    await list.scrollIntoViewIfNeeded();
    await shot(page, 'phone-instructions');
    await closeSettings(page);
  });
  await step('the / menu lists the custom commands; one is picked and run', async () => {
    await page.locator('#prompt').tap();
    await page.keyboard.type('/', { delay: 20 });
    const opt = page.locator('.popup .opt', { hasText: '/review' });
    await opt.waitFor();
    assert.match(await opt.innerText(), /Review a file for bugs/);
    assert.match(await opt.innerText(), /<file>/);
    await page.locator('.popup .opt', { hasText: '/deploy' }).waitFor();
    assert.equal(await page.locator('.popup .opt', { hasText: 'bad name' }).count(), 0, 'a bad file name is offered');
    await opt.scrollIntoViewIfNeeded(); // after ferry's own commands
    await shot(page, 'phone-custom-command');
    await opt.tap();
    await page.waitForFunction(() => document.getElementById('prompt').innerText === '/review ');
    await page.keyboard.type('main.go', { delay: 10 });
    await page.getByRole('button', { name: 'Send' }).tap();
    await page.locator('article.msg.agent[data-state="done"]', { hasText: 'No bugs in main.go.' }).waitFor();
    // The user's turn shows what they typed, not the command's text.
    const mine = page.locator('article.msg.user').last();
    assert.match(await mine.innerText(), /\/review main\.go/);
    assert.doesNotMatch(await mine.innerText(), /REVIEW-CMD/);
  });
  await ctx.close();
});
