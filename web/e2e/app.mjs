// Browser tests of the installable app (docs/ui.md, "Install the app" and
// "Waiting for you"): Playwright (playwright-core) driving headless
// Chromium against a real `ferry up`, started by web/app_e2e_test.go
// (TestBrowserApp), which passes a config file: the master's URLs, a
// control URL that stops the master, and where to put screenshots. Every
// wait is bounded.

import assert from 'node:assert/strict';
import { cfg, control, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;
// A master.session.changed "status" must beat the list's own refresh (the
// 25 s heartbeat) by far.
const PROMPT_WAIT = 5000;
const host = new URL(cfg.base).host;

/** badges is what the page asked of the Badging API, in order (0: cleared). */
const badges = (page) => page.evaluate(() => window.__badges);

/** row is the session's row in a page's session list. */
const row = (page, id) => page.locator(`.session-link[data-session="${id}"]`);

async function app(browser) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, serviceWorkers: 'allow' });
  ctx.setDefaultTimeout(WAIT);
  // Headless Chromium shows no badge: record what the app asks for.
  await ctx.addInitScript(() => {
    window.__badges = [];
    Navigator.prototype.setAppBadge = function setAppBadge(n) {
      window.__badges.push(n);
      return Promise.resolve();
    };
    Navigator.prototype.clearAppBadge = function clearAppBadge() {
      window.__badges.push(0);
      return Promise.resolve();
    };
  });
  const page = await ctx.newPage();
  watch(page, 'session page');
  let list;
  let id = '';

  await step('sign in: the service worker installs, controls the page and keeps the shell', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    const script = await page.evaluate((wait) => Promise.race([
      navigator.serviceWorker.ready.then((r) => r.active.scriptURL),
      new Promise((resolve) => { setTimeout(() => resolve('no service worker became ready'), wait); }),
    ]), WAIT);
    assert.equal(script, `${cfg.base}/sw.js`);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: WAIT });
    const kept = await page.evaluate(async () => {
      const names = (await caches.keys()).filter((n) => n.startsWith('ferry-shell-'));
      const cache = await caches.open(names[0]);
      return { names, urls: (await cache.keys()).map((r) => new URL(r.url).pathname) };
    });
    assert.equal(kept.names.length, 1, `caches ${kept.names}`);
    const main = await page.locator('script[type="module"]').getAttribute('src');
    for (const want of ['/', main, main.replace('/js/main.js', '/app.css'), main.replace('/js/main.js', '/icons/icon-192.png')]) {
      assert.ok(kept.urls.includes(want), `the shell cache lacks ${want}: ${kept.urls.join(' ')}`);
    }
    assert.ok(!kept.urls.some((u) => u.startsWith('/login') || u.startsWith('/v1/') || u === '/healthz'), `cached ${kept.urls}`);
    assert.equal(await page.title(), 'ferry');
  });

  await step('a permission shows "waiting for you" at once in another page\'s list, with the title and the badge', async () => {
    list = await ctx.newPage();
    watch(list, 'list page');
    await list.goto(`${cfg.base}/#/`);
    await list.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });

    await page.getByRole('link', { name: 'New session' }).first().click();
    await page.locator('#ns-agent').selectOption('builtin');
    await page.locator('#ns-title').fill('Write the notes');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    id = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/s\//, ''));
    await row(list, id).waitFor();
    assert.equal(await row(list, id).locator('.session-state').count(), 0, 'a new session shows a state');
    // Listed once, though both its status and the start's answer name it.
    await row(page, id).first().waitFor();
    await page.waitForTimeout(300);
    assert.equal(await row(page, id).count(), 1, 'the new session is listed twice');

    await page.locator('#prompt').click();
    await page.keyboard.type('Please write notes.txt');
    await page.keyboard.press('Enter');
    await page.locator('.interaction.open').first().waitFor();
    // The list page follows no session: only a master.session.changed
    // "status" can tell it this soon.
    const waiting = row(list, id).locator('.session-state.waiting');
    await waiting.waitFor({ timeout: PROMPT_WAIT });
    assert.equal((await waiting.innerText()).trim(), 'waiting for you');
    assert.equal(await row(list, id).locator('.session-state.running').count(), 0);
    await list.waitForFunction(() => document.title === '(1) ferry', null, { timeout: PROMPT_WAIT });
    await page.waitForFunction(() => document.title === '(1) ferry', null, { timeout: PROMPT_WAIT });
    assert.equal((await badges(list)).at(-1), 1, `badge calls ${await badges(list)}`);
    // Its own colour, not only its words.
    const colours = await waiting.evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.notEqual(colours, 'rgba(0, 0, 0, 0)', 'the waiting label has no colour of its own');
    await shot(list, 'app-waiting');
  });

  await step('answered, it is "running" again; the title and the badge clear', async () => {
    const card = page.locator('.interaction.open').first();
    await card.locator('button[data-value="allow_once"]').click();
    await card.waitFor({ state: 'detached' });
    const running = row(list, id).locator('.session-state.running');
    await running.waitFor({ timeout: PROMPT_WAIT });
    assert.equal((await running.innerText()).trim(), 'running');
    assert.equal(await row(list, id).locator('.session-state.waiting').count(), 0);
    await list.waitForFunction(() => document.title === 'ferry', null, { timeout: PROMPT_WAIT });
    await page.waitForFunction(() => document.title === 'ferry', null, { timeout: PROMPT_WAIT });
    assert.deepEqual((await badges(list)).slice(-2), [1, 0], `badge calls ${await badges(list)}`);
    const runColour = await running.evaluate((el) => getComputedStyle(el).color);
    const waitColour = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--warn'));
    assert.notEqual(runColour, waitColour);
    await shot(list, 'app-running');
    // Stopped, the session is idle: no state shown.
    await page.locator('button.stop').click();
    await page.locator('article.msg.agent[data-state="cancelled"]').last().waitFor();
    await row(list, id).locator('.session-state').waitFor({ state: 'detached', timeout: PROMPT_WAIT });
  });

  await step('with the master down the new-session menu offers no machine, and says why', async () => {
    await page.goto(`${cfg.base}/#/new`);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    const machine = page.locator('#ns-machine');
    await page.locator('#ns-machine option:not([disabled])').first().waitFor({ state: 'attached' });
    assert.equal(await page.getByRole('button', { name: 'Start session' }).isDisabled(), false);
    assert.equal(await page.locator('#ns-unreachable').isVisible(), false);
    await list.close();
    await control('/stop');
    await page.locator('#ns-unreachable').waitFor();
    assert.match(await page.locator('#ns-unreachable').innerText(), /cannot reach the master/);
    assert.ok(await machine.isDisabled(), 'the machine menu is enabled');
    assert.equal(await page.locator('#ns-machine option:not([disabled])').count(), 0, 'a machine is offered');
    assert.match(await page.locator('#ns-machine option').first().innerText(), /unknown, reconnecting/);
    assert.ok(await page.getByRole('button', { name: 'Start session' }).isDisabled(), 'Start is enabled');
    assert.match(await page.locator('.machine-state').first().innerText(), /unknown/);
    assert.equal(await page.getByRole('link', { name: /^New session in / }).count(), 0, 'the sidebar offers + New');
    await shot(page, 'app-new-session-offline');
  });

  await step('the app opens from the cache with the master stopped and says it reconnects', async () => {
    await page.goto(`${cfg.base}/`);
    await page.locator('.topbar .brand').waitFor();
    const banner = page.locator('.banner');
    await banner.waitFor();
    assert.equal(await banner.innerText(), `ferry is offline: the master at ${host} cannot be reached; it reconnects by itself.`);
    assert.match(await page.locator('.conn-pill').innerText(), /Connecting/);
    await page.getByText('The machines show once the master answers.').waitFor();
    await shot(page, 'app-offline-shell');
  });

  await step('a page the cache does not hold is the offline page, not a browser error', async () => {
    const res = await page.goto(`${cfg.base}/login?token=ferry_login_x`);
    assert.equal(res.status(), 503);
    const text = await page.locator('#offline').innerText();
    assert.match(text, new RegExp(`ferry is offline: the master at ${host.replace(/\./g, '\\.')} cannot be reached; it reconnects by itself\\.`));
    assert.equal(await page.title(), 'ferry is offline');
    await shot(page, 'app-offline-page');
  });

  await step('the master back, the offline page loads by itself and the app reconnects', async () => {
    await control('/start');
    // offline.js checks /healthz every 5 s, then loads the page asked for
    // (here the master's answer to a login link that is not valid).
    await page.locator('#offline').waitFor({ state: 'detached', timeout: 3 * WAIT });
    assert.equal(new URL(page.url()).pathname, '/login');
    await page.goto(`${cfg.base}/`);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached', timeout: 2 * WAIT });
    await page.locator('.banner').waitFor({ state: 'hidden' });
    await page.locator('.machine-state', { hasText: 'online' }).first().waitFor({ timeout: 2 * WAIT });
  });
  await ctx.close();
}

await main(async (browser) => {
  await app(browser);
});
