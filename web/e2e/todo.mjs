// Browser test of the agent's todo list and WebFetch (issue 36 items 4
// and 5; docs/agent.md "TodoWrite", "WebFetch"; docs/ui.md): Playwright
// driving headless Chromium on a 390×844 phone against a real `ferry up`
// whose agent talks to the fake model, started by web/todo_test.go (which
// checks what the model and the page server got).
//
// One turn: TodoWrite (5 items) → WebFetch of docs.example (asked per
// domain: "Allow always") → WebFetch of 127.0.0.1 (allowed once, refused
// by the network guard: a failed row, code "web") → a TodoWrite the tool
// refuses (two items in progress) → the answer. The checklist pinned above
// the prompt box shows the accepted list, folds to one line, and is
// rebuilt from the history after a reload.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 20000;
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: 'light' };

const connected = (page) => page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });

/** answer answers the open permission card whose text matches re with value. */
async function answer(page, re, value) {
  const first = page.locator('.interaction.open').first();
  await first.waitFor({ timeout: WAIT });
  const card = page.locator(`.interaction.open[data-interaction="${await first.getAttribute('data-interaction')}"]`);
  assert.match(await card.innerText(), re);
  await card.locator(`button[data-value="${value}"]`).click();
  await card.waitFor({ state: 'detached', timeout: WAIT });
}

/** checklist asserts the pinned list: its count and its current item. */
async function checklist(page) {
  const panel = page.locator('.todo-panel');
  await panel.waitFor({ timeout: WAIT });
  assert.match(await panel.locator('.todo-count').innerText(), /^1\/5$/);
  return panel;
}

await main(async (browser) => {
  const ctx = await browser.newContext(PHONE);
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'phone');

  await step('phone: a turn keeps a todo list and fetches pages, asking per domain', async () => {
    await page.goto(cfg.login);
    await connected(page);
    await page.goto(`${cfg.base}/#/new`);
    await page.locator('#ns-agent').selectOption('builtin');
    await page.locator('#ns-title').fill('Fix the parser');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
    await page.locator('#prompt').click();
    await page.keyboard.type('fix the parser and check the docs', { delay: 5 });
    await page.getByRole('button', { name: 'Send' }).tap();
    // The first list is shown as soon as its call finished.
    await checklist(page);
    const card = page.locator('.interaction.open').first();
    await card.waitFor({ timeout: WAIT });
    assert.match(await card.innerText(), /Allow WebFetch to fetch from docs\.example\?/);
    assert.match(await card.locator('button[data-value="allow_always"]').getAttribute('title'), /WebFetch\(domain:docs\.example\)/);
    await shot(page, 'agent-webfetch-ask');
    await answer(page, /docs\.example/, 'allow_always');
    await answer(page, /fetch from 127\.0\.0\.1/, 'allow_once');
    await page.locator('.status-pill[data-state="done"]').waitFor({ timeout: 40000 });
  });

  await step('phone: the fetch rows: one answered, one refused by the network guard', async () => {
    const rows = page.locator('.tool[data-tool="WebFetch"]');
    assert.equal(await rows.count(), 2);
    assert.match(await rows.nth(0).locator('.tool-status').innerText(), /done/);
    assert.match(await rows.nth(1).locator('.tool-status').innerText(), /web/);
    await rows.nth(1).locator('summary').click();
    assert.match(await rows.nth(1).innerText(), /non-public address/);
    // The refused TodoWrite is a failed row; the list shown is the accepted one.
    const todos = page.locator('.tool[data-tool="TodoWrite"]');
    assert.equal(await todos.count(), 2);
    assert.match(await todos.nth(0).locator('.tool-what').innerText(), /1\/5 · Fixing the parser/);
    assert.match(await todos.nth(1).locator('.tool-status').innerText(), /invalid input/);
  });

  await step('phone: the checklist pinned above the prompt box, expanded', async () => {
    const panel = await checklist(page);
    if ((await panel.getAttribute('data-folded')) === 'true') await panel.locator('.todo-toggle').tap();
    const items = panel.locator('.todo');
    assert.equal(await items.count(), 5);
    assert.deepEqual(await items.evaluateAll((els) => els.map((e) => e.dataset.status)),
      ['completed', 'in_progress', 'pending', 'pending', 'pending']);
    assert.equal(await items.nth(1).locator('.todo-text').innerText(), 'Fixing the parser');
    // Pinned: right above the prompt box, inside the viewport.
    const pb = await panel.boundingBox();
    const cb = await page.locator('form.composer').boundingBox();
    assert.ok(Math.abs(pb.y + pb.height - cb.y) < 2, `the list is not right above the prompt box: ${JSON.stringify([pb, cb])}`);
    assert.ok(cb.y + cb.height <= 844 + 1, 'the prompt box is below the screen');
    await shot(page, 'agent-todo-expanded');
  });

  await step('phone: folded to one line: "1/5 · current item"', async () => {
    const panel = page.locator('.todo-panel');
    await panel.locator('.todo-toggle').tap();
    assert.equal(await panel.getAttribute('data-folded'), 'true');
    assert.equal(await panel.locator('.todo-toggle').getAttribute('aria-expanded'), 'false');
    assert.equal(await panel.locator('.todo-items').isVisible(), false);
    assert.match(await panel.locator('.todo-toggle').innerText(), /^1\/5\s*·\s*Fixing the parser/);
    const box = await panel.boundingBox();
    assert.ok(box.height < 56, `the folded list takes ${box.height}px`);
    await shot(page, 'agent-todo-collapsed');
  });

  await step('phone: after a reload the list is rebuilt from the history, still folded', async () => {
    await page.reload();
    await connected(page);
    const panel = await checklist(page);
    assert.equal(await panel.getAttribute('data-folded'), 'true');
    await panel.locator('.todo-toggle').tap();
    assert.equal(await panel.locator('.todo').count(), 5);
  });
  await ctx.close();
});
