// Browser test of isolated sessions (docs/worktrees.md, docs/ui.md
// "Isolated sessions"): Playwright driving headless Chromium against a
// real `ferry up` on a real git repository, started by web/worktree_test.go
// (which checks the repository with real git through cfg.control).
//
// On a 390×844 phone: the new-session form's "Isolated (own branch)"
// switch, the session on its own branch with its .ferry/setup output, the
// agent's edit (allowed) kept out of the user's checkout, the row's branch
// line with +1 −1, the branch's Changes, the Ship sheet squash-merging it.
// On a 1280×800 desktop: a best of 2 (the isolated choice remembered for
// the workspace), its compare view, tests run in one copy, the other
// archived after the unshipped confirmation. axe audits every new view.

import assert from 'node:assert/strict';
import { audit, cfg, control, log, main, screenshot, shot, step, until, watch } from './harness.mjs';

const WAIT = 20000;
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: 'light' };
const DESKTOP = { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' };
const PROMPT = 'Make the greeting say hello, world';

const connected = (page) => page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
const sessionID = (page) => decodeURIComponent(new URL(page.url()).hash.replace(/^#\/s\//, ''));

/** sessionMenu opens the session's menu and returns the item with id. */
async function sessionMenu(page, id) {
  if (!(await page.locator('#session-menu').isVisible())) await page.locator('#session-menu-btn').click();
  await page.locator('#session-menu').waitFor();
  return page.locator(`#session-menu #${id}`);
}

/** allowEdit answers the agent's question to change src/greet.txt (tool: Edit or Write): allow once. */
async function allowEdit(page, tool = 'Edit') {
  const card = page.locator('.interaction.open').first();
  await card.waitFor({ timeout: WAIT });
  assert.match(await card.innerText(), new RegExp(`${tool}.*src/greet\\.txt`));
  await card.locator('button[data-value="allow_once"]').click();
  await card.waitFor({ state: 'detached', timeout: WAIT });
}

/** turnDone waits for the session's turn to end, done. */
async function turnDone(page) {
  await page.locator('.status-pill[data-state="done"]').waitFor({ timeout: 40000 });
}

await main(async (browser) => {
  const ctx = await browser.newContext(PHONE);
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'phone');
  let sid = '';
  let branch = '';

  await step('phone: the new-session form offers an isolated session in the git workspace', async () => {
    await page.goto(cfg.login);
    await connected(page);
    await page.goto(`${cfg.base}/#/new`);
    await page.locator('#ns-agent').selectOption('builtin');
    await page.locator('#ns-title').fill('Greet the world');
    const sw = page.locator('#ns-isolated');
    await sw.waitFor();
    assert.equal(await sw.getAttribute('role'), 'switch');
    assert.equal(await sw.isChecked(), false, 'isolated is off until chosen');
    assert.equal(await page.locator('#ns-base').isVisible(), false, 'the base shows once isolated');
    await page.locator('label[for="ns-isolated"]').tap();
    assert.equal(await sw.isChecked(), true);
    assert.equal(await page.locator('#ns-base').inputValue(), 'main', "the base defaults to the workspace's branch");
    assert.equal(await page.locator('#ns-copies').inputValue(), '1');
    await shot(page, 'worktree-new');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
    sid = sessionID(page);
  });

  await step('phone: the session is on its own branch, its setup shown; the edit stays in the worktree', async () => {
    const name = page.locator('.head-branch .branch-name');
    await name.waitFor();
    branch = (await name.innerText()).trim();
    assert.match(branch, /^ferry\/greet-the-world/);
    const setup = page.locator('.run-output[data-what="setup"]');
    await setup.waitFor();
    await page.locator('.run-output[data-what="setup"][data-state="ok"]').waitFor({ timeout: 30000 });
    if (!(await setup.evaluate((d) => d.open))) await setup.locator('summary').tap();
    assert.match(await setup.innerText(), /installing the project's tools/);
    await page.locator('#prompt').tap();
    await page.keyboard.type(PROMPT);
    await page.locator('button.send').tap();
    await allowEdit(page);
    await turnDone(page);
    log(`checkout: ${await control('/untouched')}`);
    await shot(page, 'worktree-session');
  });

  await step('phone: the list shows the branch, +1 −1 and ↑0 ↓0', async () => {
    await page.locator('.session-back').tap();
    const row = page.locator(`a.session-link[data-session="${sid}"]`);
    await row.waitFor();
    await until('the row says +1 −1', async () => (await row.locator('.branch-line .diff-stat').innerText().catch(() => '')).replace(/\s+/g, ' ') === '+1 −1', WAIT);
    assert.equal((await row.locator('.branch-line .branch-name').innerText()).trim(), branch);
    assert.equal((await row.locator('.branch-line .ahead-behind').innerText()).trim(), '↑0 ↓0');
    assert.match(await row.locator('.branch-line .sr-only').innerText(), /1 line added, 1 removed; 0 commits ahead of main, 0 behind; uncommitted changes/);
    await shot(page, 'worktree-list');
    await row.tap();
    await page.waitForURL(/#\/s\//);
  });

  await step('phone: Changes shows the branch diff against main, unified', async () => {
    await (await sessionMenu(page, 'session-branch-changes')).tap();
    const d = page.locator('#branch-changes');
    const file = d.locator('.wt-file[data-path="src/greet.txt"]');
    await file.waitFor();
    assert.match(await d.locator('[role="status"]').innerText(), /^1 file changed against main: 1 line added, 1 removed/);
    assert.equal(await file.locator('.diff-box').getAttribute('data-layout'), 'unified', 'a phone shows the diff unified');
    assert.match(await file.locator('tr.add').innerText(), /hello, world/);
    assert.match(await file.locator('tr.del').innerText(), /hello/);
    await shot(page, 'worktree-changes');
    await d.getByRole('button', { name: 'Close' }).tap();
  });

  await step('phone: Ship proposes a message, squash-merges into main and pushes the branch', async () => {
    await (await sessionMenu(page, 'session-ship')).tap();
    const sheet = page.locator('#ship-sheet');
    await sheet.waitFor();
    await until('a proposed commit message', async () => (await page.locator('#ship-message').inputValue()).trim().length > 0, WAIT);
    log(`proposed: ${JSON.stringify(await page.locator('#ship-message').inputValue())}`);
    assert.equal(await page.locator('#ship-squash').isChecked(), true, 'squash is the default');
    await shot(page, 'worktree-ship');
    await page.locator('#ship-message').fill('Greet the world\n\nThe greeting now says hello, world.');
    await page.locator('label[for="ship-push"]').tap();
    await page.locator('#ship-go').tap();
    await sheet.locator('.wt-ok').waitFor({ timeout: 60000 });
    const res = await sheet.locator('.wt-result').innerText();
    assert.match(res, /Squash-merged into main/);
    assert.match(res, new RegExp(`Pushed ${branch} to origin`));
    await shot(page, 'worktree-shipped');
    log(`main: ${await control(`/shipped?branch=${encodeURIComponent(branch)}`)}`);
    await sheet.getByRole('button', { name: 'Close' }).tap();
    // The conversation says so too (session.worktree.shipped, stored).
    await page.locator('div.note', { hasText: 'Shipped: ' }).waitFor();
  });

  let group = '';
  const dctx = await browser.newContext({ ...DESKTOP, storageState: await ctx.storageState() });
  dctx.setDefaultTimeout(WAIT);
  const desk = await dctx.newPage();
  watch(desk, 'desktop');

  await step('desktop: a best of 2 from the form, isolated remembered for the workspace', async () => {
    await desk.goto(`${cfg.base}/#/new`);
    await connected(desk);
    await desk.locator('#ns-agent').selectOption('builtin');
    assert.equal(await desk.locator('#ns-isolated').isChecked(), true, 'the isolated choice is remembered per workspace');
    await desk.locator('#ns-title').fill('Greeting contest');
    await desk.locator('#ns-copies').selectOption('2');
    await desk.locator('#ns-copy-agent-2').waitFor();
    // Copy 2 runs another model of the same agent.
    await desk.locator('#ns-copy-model-2').fill('claude-3-5-haiku-20241022');
    await desk.locator('#ns-prompt').fill(PROMPT);
    await audit(desk, 'desktop new best of 2');
    await screenshot(desk, 'worktree-best-of-2-desktop');
    await desk.getByRole('button', { name: 'Start 2 sessions' }).click();
    await desk.waitForURL(/#\/compare\//);
    group = decodeURIComponent(new URL(desk.url()).hash.replace(/^#\/compare\//, ''));
    await until('two cards', async () => (await desk.locator('.compare-card').count()) === 2, WAIT);
  });

  await step('desktop: each copy edits on its own branch (allowed in each)', async () => {
    for (let i = 0; i < 2; i++) {
      await desk.locator('.compare-card').nth(i).locator('h2 a').click();
      await desk.waitForURL(/#\/s\//);
      await allowEdit(desk);
      await turnDone(desk);
      await desk.goto(`${cfg.base}/#/compare/${encodeURIComponent(group)}`);
      await desk.locator('.compare-card').nth(1).waitFor();
    }
    const facts = (i) => desk.locator('.compare-card').nth(i).locator('.compare-facts');
    for (let i = 0; i < 2; i++) {
      await until(`copy ${i + 1}: 1 file, +1 −1`, async () => /Files\s*1\s*Lines\s*\+1\s*−1/.test((await facts(i).innerText()).replace(/\n/g, ' ')), WAIT);
      await until(`copy ${i + 1}: its tokens`, async () => /Tokens\s*[\d.]+k/.test((await facts(i).innerText()).replace(/\n/g, ' ')), WAIT);
    }
    await until('copy 2 names its model', async () => /· claude-3-5-haiku-20241022$/.test((await desk.locator('.compare-card').nth(1).locator('h2').innerText()).trim()), WAIT);
    const models = JSON.parse(await control('/models'));
    log(`models asked: ${JSON.stringify(models)}`);
    assert.ok(models.includes('claude-3-5-haiku-20241022'), 'copy 2 ran on its own model');
  });

  await step('desktop: Run tests in copy 1 passes; the compare view side by side', async () => {
    const card = desk.locator('.compare-card').nth(0);
    await card.getByRole('button', { name: 'Run tests: session 1' }).click();
    try {
      await until('the test result', async () => /Tests\s*passed/.test((await card.locator('.compare-facts').innerText()).replace(/\n/g, ' ')), 60000);
    } catch (e) {
      log(`copy 1 says: ${await card.innerText()}`);
      throw e;
    }
    const boxes = await desk.locator('.compare-card').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().top));
    assert.ok(Math.abs(boxes[0] - boxes[1]) < 2, 'side by side on a desktop');
    await shot(desk, 'worktree-compare-desktop');
  });

  await step('phone: the compare view is a row of cards to swipe through', async () => {
    await page.goto(`${cfg.base}/#/compare/${encodeURIComponent(group)}`);
    await page.locator('.compare-card').nth(1).waitFor();
    await until('both copies drawn with their facts', async () => (await page.locator('.compare-card .compare-facts').count()) === 2, WAIT);
    // A late event can redraw the cards: measure them once both are laid out.
    let a, b;
    await until('both cards laid out', async () => {
      [a, b] = await page.locator('.compare-card').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
      return a?.width > 0 && b?.width > 0;
    }, WAIT);
    assert.ok(Math.abs(a.top - b.top) < 2 && b.left > a.left, `side by side, scrolled: ${JSON.stringify([a, b])}`);
    assert.ok(b.left >= 390 * 0.8, 'the second card is off to the right, to swipe to');
    await shot(page, 'worktree-compare');
  });

  await step('desktop: "Archive the others" asks first, names what is lost, and keeps the branch', async () => {
    const other = desk.locator('.compare-card').nth(1);
    const otherBranch = (await other.locator('.compare-facts code').innerText()).trim();
    await desk.locator('.compare-card').nth(0).getByRole('button', { name: 'Archive the others: keep session 1' }).click();
    const d = desk.locator('#unshipped-dialog');
    await d.waitFor();
    assert.match(await d.innerText(), /uncommitted changes in its worktree \(1 file changed, \+1 −1\)\. Lost: the uncommitted changes; the branch ferry\/greeting-contest-2-of-2 stays\./);
    assert.equal(await d.locator('#unshipped-branch').isChecked(), false, 'the branch stays unless asked');
    await shot(desk, 'worktree-archive-desktop');
    await d.locator('#unshipped-confirm').click();
    await until('copy 2 archived', async () => /archived/.test(await desk.locator('.compare-card').nth(1).innerText()), 30000);
    log(`worktrees: ${await control(`/archived?branch=${encodeURIComponent(otherBranch)}`)}`);
  });

  await step('desktop: shipping a copy after main moved on conflicts; the agent is asked to resolve it', async () => {
    log(`main moved on: ${await control('/diverge')}`);
    const card = desk.locator('.compare-card').nth(0);
    await card.getByRole('button', { name: 'Ship this one: session 1' }).click();
    const sheet = desk.locator('#ship-sheet');
    await sheet.waitFor();
    await until('a proposed commit message', async () => (await desk.locator('#ship-message').inputValue()).trim().length > 0, WAIT);
    await desk.locator('#ship-go').click();
    const conflict = sheet.locator('.wt-conflict');
    await conflict.waitFor({ timeout: 60000 });
    await until('the refusal', async () => /Not shipped: /.test(await sheet.locator('.wt-error').innerText()), WAIT);
    log(`refusal: ${await sheet.locator('.wt-error').innerText()}`);
    assert.match(await sheet.locator('.wt-error').innerText(), /Ask the agent to resolve the conflict/);
    assert.equal(await sheet.locator('.wt-error [data-code]').getAttribute('data-code'), 'merge_conflict');
    assert.deepEqual(await conflict.locator('.wt-conflict-files li').allInnerTexts(), ['src/greet.txt']);
    await shot(desk, 'worktree-conflict-desktop');
    await desk.locator('#ship-resolve').click();
    // The sheet closes on the session, whose agent got the prompt naming the file.
    await desk.waitForURL(/#\/s\//);
    await desk.locator('article.msg.user', { hasText: 'Resolve the merge conflicts in: src/greet.txt.' }).waitFor();
    await allowEdit(desk, 'Write');
    await turnDone(desk);
  });

  await step('desktop: the resolved copy ships: main has the resolution, the checkout its user\'s work', async () => {
    await (await sessionMenu(desk, 'session-ship')).click();
    const sheet = desk.locator('#ship-sheet');
    await sheet.waitFor();
    if (!(await desk.locator('#ship-message').inputValue()).trim()) await desk.locator('#ship-message').fill('Greet both ways');
    await desk.locator('#ship-go').click();
    await sheet.locator('.wt-ok').waitFor({ timeout: 60000 });
    assert.match(await sheet.locator('.wt-result').innerText(), /Squash-merged into main/);
    log(`main: ${await control('/resolved')}`);
    await sheet.getByRole('button', { name: 'Done' }).click();
  });

  await step('desktop: Delete… of an isolated session says its worktree goes, and can take the branch', async () => {
    const b = (await desk.locator('.head-branch .branch-name').innerText()).trim();
    // The menu leads back to the copies' compare view.
    const cmp = await sessionMenu(desk, 'session-compare');
    assert.equal((await cmp.innerText()).trim(), 'Compare the 2 copies');
    assert.equal(await cmp.getAttribute('href'), `#/compare/${encodeURIComponent(group)}`);
    await desk.keyboard.press('Escape');
    await (await sessionMenu(desk, 'session-delete')).click();
    const d = desk.locator('#delete-dialog');
    await d.waitFor();
    assert.match(await d.locator('.wt-delete').innerText(), new RegExp(`worktree folder is removed; the branch ${b.replace('/', '\\/')} stays`));
    await d.locator('label[for="delete-branch"]').click();
    assert.match(await d.locator('.wt-delete').innerText(), /is deleted too/);
    await audit(desk, 'desktop delete isolated');
    await d.locator('#delete-confirm').click();
    await desk.waitForURL((u) => !/#\/s\//.test(u.hash));
    log(`branches: ${await control(`/deleted?branch=${encodeURIComponent(b)}`)}`);
  });

  await dctx.close();
  await ctx.close();
});
