// Browser test of ferry's Task tool (issue 36 item 3) on a phone: two
// sub-agents run for one model message, and the transcript shows each
// Task call with its sub-agent's steps folded under it with their count,
// never as calls of the turn; a tap unfolds them; a reload (the session
// replayed from the master's history) shows the same. Run by
// web/task_test.go (TestBrowserAgentTask). Every wait is bounded.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 20000;

/** tasks reads what the transcript shows of the turn's tool calls. */
async function tasks(page) {
  return page.evaluate(() => [...document.querySelectorAll('.block.k-tool > .tool')].map((box) => ({
    name: box.dataset.tool,
    what: box.querySelector(':scope > details > summary .tool-what')?.textContent || '',
    steps: box.querySelector(':scope > .task-steps > summary')?.textContent || '',
    open: box.querySelector(':scope > .task-steps')?.open ?? null,
    inner: [...box.querySelectorAll('.task-step-list > li > .tool')].map((s) => s.dataset.tool),
  })));
}

async function checkFolded(page) {
  const got = await tasks(page);
  assert.deepEqual(got.map((x) => [x.name, x.what, x.steps, x.open]), [
    ['Task', 'Find the server', '3 steps', false],
    ['Task', 'Read the docs', '2 steps', false],
  ], `the turn's calls: ${JSON.stringify(got)}`);
  assert.deepEqual(got[0].inner, ['Glob', 'Grep', 'Read']);
  assert.deepEqual(got[1].inner, ['Glob', 'Read']);
  assert.equal(await page.locator('.task-step-list').first().isVisible(), false, 'the steps are not folded');
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'task');
  await step('sign in on a phone and start a session with ferry\'s agent', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    if (!(await page.locator('#ns-title').isVisible())) {
      await page.getByRole('link', { name: 'New session' }).first().tap();
    }
    await page.locator('#ns-title').fill('Sub-agents');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
  });
  await step('two Task calls run; each shows its sub-agent\'s steps folded under it', async () => {
    await page.locator('#prompt').tap();
    await page.keyboard.type('Where does the server start, and what do the docs say?', { delay: 2 });
    await page.locator('button.send').tap();
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    await checkFolded(page);
    await page.locator('.tool[data-tool="Task"]').first().scrollIntoViewIfNeeded();
    await shot(page, 'agent-task-folded');
  });
  await step('a tap unfolds one sub-agent\'s steps; the Task call holds its answer', async () => {
    await page.locator('.task-steps > summary').first().tap();
    const list = page.locator('.task-step-list').first();
    await list.waitFor({ state: 'visible' });
    assert.equal(await list.locator(':scope > li').count(), 3);
    assert.match(await list.innerText(), /cmd\/server\.go/);
    await page.locator('.tool[data-tool="Task"]').first().scrollIntoViewIfNeeded();
    await shot(page, 'agent-task-steps');
    await page.locator('.tool[data-tool="Task"] > details > summary').first().tap();
    assert.match(await page.locator('.tool[data-tool="Task"] .tool-body').first().innerText(), /cmd\/server\.go:4/);
  });
  await step('after a reload the replayed session folds the steps the same way', async () => {
    await page.reload();
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    await checkFolded(page);
  });
  await ctx.close();
});
