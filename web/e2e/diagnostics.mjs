// Browser test of diagnostics after edits (docs/agent.md "Diagnostics
// after edits"): Playwright driving headless Chromium on a 390×844 phone
// against a real `ferry up` whose agent has the real gopls, started by
// web/diagnostics_test.go. The Write the user allows makes a type error:
// its card's output carries gopls's error with its line and column; the
// Edit that fixes it carries none.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 30000;
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: 'light' };

/** allow answers the agent's question to use tool on main.go: allow once. */
async function allow(page, tool) {
  const card = page.locator('.interaction.open').first();
  await card.waitFor({ timeout: WAIT });
  assert.match(await card.innerText(), new RegExp(`${tool}[\\s\\S]*main\\.go`));
  await card.locator('button[data-value="allow_once"]').tap();
  await card.waitFor({ state: 'detached', timeout: WAIT });
}

/** output opens the card of the tool call named tool and returns its output. */
async function output(page, tool) {
  const box = page.locator(`.tool[data-tool="${tool}"]`).first();
  await box.waitFor();
  if (!(await box.locator('details.tool-details').evaluate((d) => d.open))) await box.locator('summary').tap();
  const pre = box.locator('pre.tool-output');
  await pre.waitFor();
  await pre.scrollIntoViewIfNeeded();
  return pre.innerText();
}

await main(async (browser) => {
  const ctx = await browser.newContext(PHONE);
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'phone');

  await step('phone: a session of ferry\'s agent; the user allows the Write and the Edit', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.goto(`${new URL(cfg.login).origin}/#/new`);
    await page.locator('#ns-agent').selectOption('builtin');
    await page.locator('#ns-title').fill('Diagnostics');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
    await page.locator('#prompt').tap();
    await page.keyboard.type('Write a main.go that declares n');
    await page.locator('button.send').tap();
    await allow(page, 'Write');
    await allow(page, 'Edit');
    await page.locator('.status-pill[data-state="done"]').waitFor({ timeout: 60000 });
  });

  await step('phone: the Write\'s result carries gopls\'s type error; the Edit\'s none', async () => {
    const wrote = await output(page, 'Write');
    assert.match(wrote, /^Created main\.go \(6 lines\)\.\ngopls reports 1 error in main\.go after this change:\nmain\.go:4:14: cannot use "one"/);
    await shot(page, 'diagnostics-write');
    const edited = await output(page, 'Edit');
    assert.doesNotMatch(edited, /gopls reports/);
  });
});
