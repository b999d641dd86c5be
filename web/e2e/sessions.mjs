// Browser test of managing sessions: Playwright (playwright-core) driving
// headless Chromium against a real `ferry up` whose script agent answers
// every prompt with a fixed line. Two pages of one browser play two open
// UIs. It renames a session inline (the other UI follows without a
// reload), searches by title, by prompt text and by the agent's answer
// (and shows "no match"), archives a session (it leaves the list, the
// Archived filter shows it, it is read-only) and unarchives it, deletes a
// session after a confirmation (the other UI that has it open says it was
// deleted, the other session is kept), and checks the controls are
// touch-sized on a phone. Each screenshot (cfg.screenshots) is audited
// with axe-core's WCAG 2.1 A/AA rules. Started by web/sessions_test.go,
// which passes a config file.

import assert from 'node:assert/strict';
import { cfg, main, problems, shot, step } from './harness.mjs';

const WAIT = 15000;

/** start starts a session with a title and one prompt; returns its id. */
async function start(page, title, text) {
  await page.goto(`${cfg.base}/#/new`);
  await page.locator(`#ns-agent option[value="${cfg.agent}"]`).waitFor({ state: 'attached' });
  await page.locator('#ns-agent').selectOption(cfg.agent);
  await page.locator('#ns-title').fill(title);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//, { timeout: WAIT });
  await page.locator('#prompt').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
  return decodeURIComponent(new URL(page.url()).hash.replace('#/s/', ''));
}

/** menu opens the session's menu (Rename, Archive, Delete live there). */
async function menu(page) {
  if (!(await page.locator('#session-menu').isVisible())) await page.locator('#session-menu-btn').click();
  await page.locator('#session-menu').waitFor();
}

const link = (page, id) => page.locator(`.sidebar a.session-link[data-session="${id}"]`);

/** search types q into the sidebar's search box (debounced). */
async function search(page, q) {
  await page.locator('#session-search').fill(q);
}

/** found is the ids the search results list, once they settle. */
async function found(page, want) {
  await page.waitForFunction((ids) => {
    const got = [...document.querySelectorAll('.sessions.found a.session-link')].map((a) => a.dataset.session);
    return JSON.stringify(got) === JSON.stringify(ids);
  }, want, { timeout: WAIT });
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  let a = '';
  let b = '';
  let other = null;

  await step('sign in and start two sessions, one prompt each', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    a = await start(page, 'Alpha notes', 'please find the walrus');
    b = await start(page, 'Beta work', 'hello there');
    assert.notEqual(a, b);
    await link(page, a).waitFor();
    await link(page, b).waitFor();
  });

  await step('a second UI opens the second session', async () => {
    other = await ctx.newPage();
    other.on('pageerror', (e) => problems.push(`page error (other): ${e.message}`));
    await other.goto(`${cfg.base}/#/s/${encodeURIComponent(b)}`);
    await other.locator('#session-title', { hasText: 'Beta work' }).waitFor();
  });

  await step('rename inline: trimmed, shown here and at once in the other UI', async () => {
    await menu(page);
    await page.locator('#session-rename').click();
    const input = page.locator('#rename-input');
    assert.equal(await input.inputValue(), 'Beta work');
    await input.fill('  Gamma renamed  ');
    await input.press('Enter');
    await page.locator('#session-title', { hasText: 'Gamma renamed' }).waitFor();
    assert.equal(await page.locator('#session-title').textContent(), 'Gamma renamed');
    await link(page, b).locator('.session-name', { hasText: 'Gamma renamed' }).waitFor();
    // The other UI learns it from the master, with no reload.
    await other.locator('#session-title', { hasText: 'Gamma renamed' }).waitFor();
    await link(other, b).locator('.session-name', { hasText: 'Gamma renamed' }).waitFor();
  });

  await step('rename: Escape cancels, a cleared title goes back to the automatic label', async () => {
    await menu(page);
    await page.locator('#session-rename').click();
    await page.locator('#rename-input').fill('never saved');
    await page.locator('#rename-input').press('Escape');
    assert.equal(await page.locator('#session-title').textContent(), 'Gamma renamed');
    await menu(page);
    await page.locator('#session-rename').click();
    await page.locator('#rename-input').fill('   ');
    await page.locator('#rename-save').click();
    await page.locator('#session-title', { hasText: 'Untitled session' }).waitFor();
    await menu(page);
    await page.locator('#session-rename').click();
    await page.locator('#rename-input').fill('Gamma renamed');
    await page.locator('#rename-input').press('Enter');
    await page.locator('#session-title', { hasText: 'Gamma renamed' }).waitFor();
  });

  await step('search by title, by the prompt, by the agent\'s answer; no match says so', async () => {
    await search(page, 'gamma');
    await found(page, [b]);
    await search(page, 'WALRUS');
    await found(page, [a]);
    await search(page, `${cfg.answerWord}`);
    await found(page, [b, a]);
    await shot(page, 'sessions-search');
    await search(page, 'no-such-thing-anywhere');
    await page.locator('.no-match', { hasText: 'No match' }).waitFor();
    await shot(page, 'sessions-no-match');
    await search(page, '');
    await link(page, a).waitFor();
    await link(page, b).waitFor();
  });

  await step('archive: out of the list, read-only, found with the Archived filter; unarchive brings it back', async () => {
    await link(page, a).click();
    await page.locator('#session-title', { hasText: 'Alpha notes' }).waitFor();
    await menu(page);
    await page.locator('#session-archive').click();
    await page.locator('.archived-note').waitFor();
    await shot(page, 'session-archived');
    assert.equal(await page.locator('form.composer').isVisible(), false, 'an archived session shows the prompt box');
    await page.waitForFunction((id) => !document.querySelector(`.sidebar .machines a.session-link[data-session="${id}"]`), a);
    await page.locator('#archived-filter').click();
    await found(page, [a]);
    await search(page, 'walrus');
    await found(page, [a]);
    await search(page, '');
    await page.locator('#archived-filter').click();
    await page.locator('#archived-unarchive').click();
    await page.locator('form.composer').waitFor();
    await link(page, a).waitFor();
    assert.equal(await page.locator('#session-archive').textContent(), 'Archive');
  });

  await step('delete: asks first; Cancel keeps it; Delete removes it, the other UI says so, the other session stays', async () => {
    await link(page, b).click();
    await page.locator('#session-title', { hasText: 'Gamma renamed' }).waitFor();
    await menu(page);
    await page.locator('#session-delete').click();
    const dialog = page.locator('#delete-dialog');
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /Gamma renamed/);
    await shot(page, 'session-delete');
    await page.locator('#delete-cancel').click();
    await dialog.waitFor({ state: 'hidden' });
    await page.locator('#session-title', { hasText: 'Gamma renamed' }).waitFor();
    await menu(page);
    await page.locator('#session-delete').click();
    await page.locator('#delete-confirm').click();
    await page.waitForFunction(() => location.hash === '#/' || location.hash === '');
    await page.waitForFunction((id) => !document.querySelector(`.sidebar a.session-link[data-session="${id}"]`), b);
    await other.locator('#session-deleted', { hasText: 'This session was deleted' }).waitFor();
    await shot(other, 'session-deleted-elsewhere');
    await link(other, a).waitFor();
    assert.equal(await link(other, b).count(), 0, 'the other UI still lists the deleted session');
    // The kept session opens with its history.
    await link(page, a).click();
    await page.locator('article.msg.user', { hasText: 'please find the walrus' }).waitFor();
  });

  await step('after a reload the deleted session is gone: its link says so, search does not find it', async () => {
    await page.goto(`${cfg.base}/#/s/${encodeURIComponent(b)}`);
    await page.reload();
    await page.locator('main h1', { hasText: 'No such session' }).waitFor();
    await search(page, 'gamma');
    await page.locator('.no-match').waitFor();
    await search(page, '');
  });

  await step('on a phone the controls are buttons with touch-sized targets', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, storageState: await ctx.storageState() });
    phone.setDefaultTimeout(WAIT);
    const p = await phone.newPage();
    p.on('pageerror', (e) => problems.push(`page error (phone): ${e.message}`));
    await p.goto(`${cfg.base}/#/`);
    const box = await p.locator('#session-search').boundingBox();
    assert.ok(box && box.height >= 44, `the search box is ${box?.height}px high`);
    await link(p, a).tap();
    await p.locator('#session-title', { hasText: 'Alpha notes' }).waitFor();
    await p.locator('#session-menu-btn').tap();
    await p.locator('#session-menu').waitFor();
    for (const id of ['#session-menu-btn', '#session-rename', '#session-archive', '#session-delete']) {
      const bb = await p.locator(id).boundingBox();
      assert.ok(bb && bb.height >= 44 && bb.width >= 44, `${id} is ${bb?.width}×${bb?.height}`);
    }
    await shot(p, 'phone-session-actions');
    await p.locator('#session-rename').tap();
    await p.locator('#rename-input').fill('Alpha from the phone');
    await shot(p, 'phone-rename');
    await p.locator('#rename-save').tap();
    await p.locator('#session-title', { hasText: 'Alpha from the phone' }).waitFor();
    await phone.close();
  });
  await ctx.close();
});
