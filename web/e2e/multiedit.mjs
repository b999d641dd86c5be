// Browser test of MultiEdit and NotebookEdit in ferry's web UI (issue 36),
// on a phone: each call asks once with the diff of its whole change, the
// transcript shows the diffs under the calls, and refused calls (overlapping
// edits, an unknown notebook cell) show their codes' names. Driven by
// web/multiedit_test.go (TestBrowserMultiEditNotebookEdit), which checks the
// files. Every wait is bounded.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

/** allow answers the open permission card of tool with "allow once", after checking its diff. */
async function allow(page, tool, path, shotName) {
  const card = page.locator('.interaction.open').first();
  await card.waitFor();
  assert.match(await card.innerText(), new RegExp(path.replace('.', '\\.')), `the question for ${tool} does not name ${path}`);
  const diff = card.locator('table.diff');
  await diff.waitFor();
  assert.match(await diff.getAttribute('aria-label'), new RegExp(`Changes to ${path.replace('.', '\\.')}`));
  await shot(page, shotName);
  await card.locator('button[data-value="allow_once"]').tap();
  await page.locator('.interaction.settled').nth(tool === 'MultiEdit' ? 0 : 1).waitFor();
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'multiedit');
  await step('start a session of ferry\'s agent on a phone', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    if (!(await page.locator('#ns-title').isVisible())) {
      await page.getByRole('link', { name: 'New session' }).first().tap();
      await page.locator('#ns-title').waitFor();
    }
    await page.locator('#ns-title').fill('Edits');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
  });
  await step('MultiEdit asks once, with the diff of all its edits', async () => {
    await page.locator('#prompt').click();
    await page.keyboard.type('multiply in calc.py, double the notebook', { delay: 5 });
    // On a phone Enter is a new line: the send button sends.
    await page.locator('button.send').tap();
    await allow(page, 'MultiEdit', 'calc.py', 'phone-multiedit-ask');
  });
  await step('NotebookEdit asks once, with the diff of the cell', async () => {
    await allow(page, 'NotebookEdit', 'n.ipynb', 'phone-notebookedit-ask');
  });
  await step('the transcript shows both diffs and both refusals by name', async () => {
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    const ok = (tool) => page.locator(`.tool.status-ok[data-tool="${tool}"]`);
    for (const tool of ['MultiEdit', 'NotebookEdit']) {
      await ok(tool).first().waitFor();
      assert.equal(await ok(tool).first().locator('table.diff').count(), 1, `${tool}'s diff is not shown`);
    }
    const multi = await ok('MultiEdit').first().locator('table.diff').innerText();
    assert.match(multi, /a = 10/);
    assert.match(multi, /print\(a \* b\)/);
    assert.match(await ok('NotebookEdit').first().locator('table.diff').innerText(), /total = 2 \* 21/);
    const failed = (tool) => page.locator(`.tool.status-error[data-tool="${tool}"] .tool-status`);
    assert.equal((await failed('MultiEdit').innerText()).trim(), 'overlap');
    assert.equal((await failed('NotebookEdit').innerText()).trim(), 'no cell');
    // Two questions in all: the refused calls asked nothing.
    assert.equal(await page.locator('.interaction').count(), 2);
    await ok('MultiEdit').first().scrollIntoViewIfNeeded();
    await shot(page, 'phone-multiedit-notebookedit');
    await failed('MultiEdit').scrollIntoViewIfNeeded();
    await shot(page, 'phone-multiedit-refused');
  });
  await step('Undo under the MultiEdit card restores the file as one step', async () => {
    const card = page.locator('.tool.status-ok[data-tool="MultiEdit"]').first();
    await card.getByRole('button', { name: 'Undo this edit of calc.py' }).tap();
    await card.locator('.undone').waitFor();
    assert.match(await card.locator('.undone').innerText(), /calc\.py restored/);
  });
  await ctx.close();
});
