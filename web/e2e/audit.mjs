// axe-core's WCAG 2.1 A and AA rules on every screen of ferry's web UI, in
// the light and the dark colour scheme, as a phone (390×844) and as a
// desktop (1280×800), against a real `ferry up` (echo and ferry's own agent
// on the fake Anthropic server). Started by TestAxeEveryScreen
// (web/audit_test.go). Each screen is reached as a person would reach it,
// then audited twice (prefers-color-scheme light, then dark) without
// reloading. Prints one "axe: <form factor> <scheme> <screen>: N
// violations" line per audit and a summary; any violation fails the run.
// The screens are listed in docs/ui.md ("Audits"): keep them in step.

import assert from 'node:assert/strict';
import { audit, cfg, closeSettings, control, log, main, openSettings, problems, step, watch } from './harness.mjs';

const WAIT = 15000;
const schemes = ['light', 'dark'];
/** table holds one row per audit: form factor, scheme, screen, violations. */
const table = [];

/** check audits the page as it is, once per colour scheme. */
async function check(page, form, screen) {
  for (const scheme of schemes) {
    await page.emulateMedia({ colorScheme: scheme, reducedMotion: 'reduce' });
    // Two frames: the new scheme's styles are applied and painted.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const before = problems.length;
    await audit(page, `${form} ${scheme} ${screen}`);
    const n = problems.length - before;
    table.push({ form, scheme, screen, n });
    log(`axe: ${form} ${scheme} ${screen}: ${n} violations`);
  }
}

/**
 * action runs a session action by its button's name: a button on screen,
 * or an item of the session's menu where the header keeps it there.
 */
async function action(page, name) {
  const direct = page.getByRole('button', { name, exact: false }).filter({ visible: true });
  if (await direct.count()) {
    await direct.first().click();
    return;
  }
  const menu = page.locator('.session-head [aria-haspopup]:not([aria-haspopup="dialog"]), .session-head summary')
    .or(page.locator('.session-head').getByRole('button', { name: /menu|more|actions/i })).filter({ visible: true }).first();
  await menu.click();
  await page.getByRole('menuitem', { name }).or(page.getByRole('button', { name })).filter({ visible: true }).first().click();
}

async function typePrompt(page, text) {
  await page.locator('#prompt').click();
  await page.keyboard.type(text);
}

/** prompt sends text: Enter, or Send on a touch screen (where Enter is a new line). */
async function prompt(page, text) {
  await typePrompt(page, text);
  if (await page.evaluate(() => matchMedia('(pointer: coarse)').matches)) await page.locator('button.send').or(page.getByRole('button', { name: /^Send/ })).first().click();
  else await page.keyboard.press('Enter');
}

const doneTurns = (page) => page.locator('article.msg.agent[data-state="done"]');

async function startSession(page, agent, title) {
  if (!(await page.locator('#ns-agent').isVisible())) await page.evaluate(() => { location.hash = '#/new'; });
  await page.locator(`#ns-agent option[value="${agent}"]`).waitFor({ state: 'attached' });
  await page.locator('#ns-agent').selectOption(agent);
  await page.locator('#ns-title').fill(title);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//);
  await page.getByRole('heading', { name: title }).waitFor();
}

/** closeDialog closes the open dialog by its Close or Cancel button, or Escape. */
async function closeDialog(page) {
  const dlg = page.locator('dialog[open]');
  const btn = dlg.getByRole('button', { name: /^(Close|Cancel)$/ });
  if (await btn.count()) await btn.first().click();
  else await page.keyboard.press('Escape');
  await dlg.waitFor({ state: 'detached' }).catch(() => dlg.waitFor({ state: 'hidden' }));
}

/** pass goes through every screen as one form factor. */
async function pass(browser, form) {
  const phone = form === 'phone';
  const ctx = await browser.newContext(phone
    ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 }
    : { viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, form);
  // The socket passes through Playwright so that the offline screen can be
  // shown: with refuse set, every new connection is closed.
  const net = { refuse: false, sockets: [] };
  await page.routeWebSocket(/\/v1\/ui$/, (ws) => {
    if (net.refuse) {
      ws.close({ code: 1011, reason: 'master down' });
      return;
    }
    ws.connectToServer();
    net.sockets.push(ws);
  });
  await page.route(/\/(healthz|readyz)$/, (rt) => (net.refuse ? rt.abort() : rt.continue()));
  const S = (s) => `${form}: ${s}`;
  const go = async (hash) => {
    await page.evaluate((h) => { location.hash = h; }, hash);
  };

  await step(S('sign-in, and a refused login link'), async () => {
    await page.goto(cfg.base);
    await page.getByRole('heading', { name: 'Sign in to ferry' }).waitFor();
    await check(page, form, 'sign-in');
    await page.locator('#login-link').fill(`${cfg.base}/login?token=ferry_login_${'x'.repeat(43)}`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The error shows in place, or (the form used to leave for the login
    // page) on the login page: audit what shows.
    await Promise.race([
      page.locator('[role="alert"]:not(:empty), .form-error:not(:empty)').filter({ visible: true }).first().waitFor(),
      page.waitForURL(/\/login\?/).then(() => page.waitForLoadState()),
    ]);
    await check(page, form, 'sign-in, refused link');
  });

  await step(S('the login pages: a refused link, a link while signed in'), async () => {
    await page.goto(`${cfg.base}/login?token=ferry_login_bogus`);
    await page.locator('body').waitFor();
    await check(page, form, 'login link refused (page)');
    await page.goto(await control('/login'));
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.goto(`${cfg.control}/link`);
    await page.locator('#go').click();
    await page.getByRole('heading', { name: 'Sign in to ferry?' }).waitFor();
    await page.locator('#replace').waitFor();
    await check(page, form, 'login link from another site (confirm page)');
    await page.goto(cfg.base);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
  });

  await step(S('the sessions list and the new-session form'), async () => {
    await go('#/');
    await page.locator('.machine-name').first().waitFor();
    await check(page, form, 'sessions list (empty)');
    await page.locator('a[href="#/new"]').filter({ visible: true }).first().click();
    await page.locator('#ns-agent option[value="echo"]').waitFor({ state: 'attached' });
    await check(page, form, 'new session');
  });

  await step(S('"Open on your phone": the login link as a QR code'), async () => {
    await page.locator('#open-on-phone').click();
    await page.locator('#phone-qr svg').waitFor();
    await check(page, form, 'open on your phone');
    await page.locator('#phone-close').click();
    await page.locator('#phone-dialog').waitFor({ state: 'hidden' });
  });

  const echoTitle = `Echo on a ${form}`;
  let echoHash = '';
  await step(S('a session: empty, idle after a reply and a failed turn, running, waiting'), async () => {
    await startSession(page, 'echo', echoTitle);
    echoHash = new URL(page.url()).hash;
    await check(page, form, 'session, no turn yet');
    await prompt(page, 'Summarise the **README** and list `three` things to tidy');
    await doneTurns(page).first().waitFor();
    await prompt(page, 'fail: on purpose');
    await page.locator('article.msg.agent[data-state="error"]').first().waitFor();
    await check(page, form, 'session idle (a reply, a failed turn)');
    await prompt(page, Array.from({ length: 400 }, (_, i) => `w${i}`).join(' '));
    await page.locator('.status-pill', { hasText: 'Running' }).waitFor();
    await check(page, form, 'session running');
    await doneTurns(page).nth(1).waitFor({ timeout: 30000 });
    await prompt(page, 'ask: may I rewrite the README?');
    await page.locator('.interaction.open').waitFor();
    await check(page, form, 'session waiting: permission');
    await page.locator('.interaction.open button[data-value="allow_once"]').click();
    await doneTurns(page).nth(2).waitFor();
  });

  await step(S('questions of every kind'), async () => {
    await page.evaluate(async () => {
      const base = new URL('.', document.querySelector('script[type="module"]').src).href;
      const { renderInteraction } = await import(`${base}interaction.js`);
      const box = document.createElement('div');
      box.id = 'audit-fixture';
      const reqs = [
        { interaction_id: 'a1', turn_id: 't', kind: 'single_select', title: 'Which database?', timeout_ms: 300000,
          options: [{ value: 'pg', label: 'PostgreSQL', description: 'the shared one' }, { value: 'lite', label: 'SQLite', description: 'a file' }] },
        { interaction_id: 'a2', turn_id: 't', kind: 'multi_select', title: 'Which checks?', default_value: 'lint',
          options: [{ value: 'lint', label: 'Lint' }, { value: 'test', label: 'Tests' }] },
        { interaction_id: 'a3', turn_id: 't', kind: 'text_input', title: 'Anything else?' },
      ];
      for (const req of reqs) {
        box.appendChild(renderInteraction({ id: req.interaction_id, req, status: 'open', seenAt: Date.now(), live: true, resolved: null, sending: false, error: '' }, () => {}));
      }
      document.querySelector('.transcript').append(box);
      box.scrollIntoView();
    });
    await check(page, form, 'session waiting: questions (single, multiple, text)');
    await page.evaluate(() => document.getElementById('audit-fixture').remove());
  });

  await step(S('the @ file picker and the / commands'), async () => {
    await typePrompt(page, 'look at @');
    await page.locator('.popup .opt').first().waitFor();
    await check(page, form, 'file picker (@)');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await typePrompt(page, '/');
    await page.locator('.popup .opt').first().waitFor();
    await check(page, form, 'commands (/)');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
  });

  await step(S('the session\'s dialogs: files, changes, compact, rename, delete'), async () => {
    await action(page, /^Files/);
    await page.locator('dialog[open]').waitFor();
    await check(page, form, 'files dialog (none yet)');
    await closeDialog(page);
    await action(page, /^Changes$/);
    await page.locator('dialog[open]').waitFor();
    await check(page, form, 'changes dialog (none)');
    await closeDialog(page);
    await action(page, /^Compact/);
    await page.locator('dialog[open]').waitFor();
    await check(page, form, 'compact dialog');
    await closeDialog(page);
    await action(page, /^Rename$/);
    await page.locator('.rename-form input').filter({ visible: true }).first().waitFor();
    await check(page, form, 'rename');
    await page.locator('.rename-form').getByRole('button', { name: 'Cancel' }).click();
    await action(page, /^Delete/);
    await page.locator('dialog[open]').waitFor();
    await check(page, form, 'delete dialog');
    await closeDialog(page);
  });

  await step(S('ferry\'s agent: a permission with its diff, the answer, the changes, the prompt settings'), async () => {
    await startSession(page, 'builtin', `Fix the check on a ${form}`);
    // The prompt settings live in the session's settings sheet.
    const sheet = await openSettings(page);
    const details = sheet.locator('details.prompt-settings');
    if (!(await details.evaluate((d) => d.open))) await details.locator('summary').click();
    await page.locator('#setting-max_turns').waitFor();
    await check(page, form, 'settings sheet with the prompt settings');
    await closeSettings(page);
    await prompt(page, 'Fix the comparison in src/auth.ts');
    const card = page.locator('.interaction.open');
    await card.locator('.diff-box').waitFor();
    await check(page, form, 'session waiting: permission with a diff');
    // Allow the Edit, then the Write of a file it hands over.
    for (const tool of ['Edit', 'Write']) {
      const open = page.locator('.interaction.open', { hasText: tool });
      await open.locator('button[data-value="allow_once"]').click();
      await open.waitFor({ state: 'detached' });
    }
    await doneTurns(page).first().waitFor();
    await check(page, form, 'session with an edit, Markdown and code');
    await action(page, /^Changes$/);
    await page.locator('dialog[open] .diff-box').first().waitFor();
    await check(page, form, 'changes dialog (a diff)');
    await closeDialog(page);
    await action(page, /^Files/);
    await page.locator('dialog[open] .artifact').first().waitFor();
    await check(page, form, 'files dialog (a file)');
    await closeDialog(page);
  });

  await step(S('search: found, nothing found'), async () => {
    await go('#/');
    const search = page.locator('#session-search').filter({ visible: true }).first();
    await search.fill('echo');
    await page.locator('.session-link', { hasText: echoTitle }).filter({ visible: true }).first().waitFor();
    await check(page, form, 'sessions list, search results');
    await search.fill('zzqqxx');
    await page.locator('.session-link', { hasText: echoTitle }).filter({ visible: true }).waitFor({ state: 'hidden' });
    await check(page, form, 'sessions list, nothing found');
    await search.fill('');
    await page.locator('.session-link').filter({ visible: true }).first().waitFor();
    await check(page, form, 'sessions list');
  });

  await step(S('archived: the session, the list'), async () => {
    await page.locator('.session-link', { hasText: echoTitle }).filter({ visible: true }).first().click();
    await page.getByRole('heading', { name: echoTitle }).waitFor();
    await action(page, /^Archive$/);
    await page.locator('.archived-note').filter({ visible: true }).waitFor();
    await check(page, form, 'archived session');
    await go('#/');
    const filter = page.locator('#archived-filter').filter({ visible: true }).first();
    await filter.click();
    await page.locator('.session-link', { hasText: echoTitle }).filter({ visible: true }).first().waitFor();
    await check(page, form, 'sessions list, archived');
    await filter.click();
  });

  await step(S('deleted: here (a toast), elsewhere, and an unknown session'), async () => {
    const title = `Fix the check on a ${form}`;
    await go('#/');
    await page.locator('.session-link', { hasText: title }).filter({ visible: true }).first().click();
    await page.getByRole('heading', { name: title }).waitFor();
    const other = await ctx.newPage();
    watch(other, `${form}, second page`);
    await other.goto(page.url());
    await other.getByRole('heading', { name: title }).waitFor();
    await action(other, /^Delete/);
    await other.locator('#delete-confirm').click();
    await other.locator('.toast').filter({ hasText: 'Deleted' }).waitFor();
    await check(other, form, 'sessions list, a session deleted (toast)');
    await other.close();
    await page.locator('#session-deleted').waitFor();
    await check(page, form, 'session deleted elsewhere');
    await go('#/s/no-such-session');
    await page.getByRole('heading', { name: 'No such session' }).waitFor();
    await check(page, form, 'no such session');
  });

  await step(S('offline: the master cannot be reached'), async () => {
    await go(echoHash);
    await page.getByRole('heading', { name: echoTitle }).waitFor();
    net.refuse = true;
    for (const ws of net.sockets) await ws.close({ code: 1011, reason: 'master down' }).catch(() => {});
    await page.locator('.banner').filter({ hasText: /offline|lost/i }).waitFor();
    await check(page, form, 'offline (session)');
    await go('#/');
    await check(page, form, 'offline (sessions list)');
    net.refuse = false;
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached', timeout: 30000 });
  });

  await step(S('signed out: the sign-in is no longer valid'), async () => {
    // The master refuses a cookie it does not know, as it does a revoked one.
    const cookies = await ctx.cookies(cfg.base);
    const mine = cookies.filter((c) => c.name.startsWith('ferry'));
    assert.ok(mine.length, `no ferry cookie: ${JSON.stringify(cookies.map((c) => c.name))}`);
    await ctx.addCookies(mine.map((c) => ({ ...c, value: `${c.value.replace(/.{8}$/, '')}AAAAAAAA` })));
    await page.reload();
    await page.getByRole('heading', { name: /Signed out|Sign in to ferry/ }).waitFor();
    await check(page, form, 'signed out');
  });
  await ctx.close();
}

main(async (browser) => {
  for (const form of cfg.forms) await pass(browser, form);
  const bad = table.filter((r) => r.n);
  const screens = [...new Set(table.map((r) => r.screen))];
  console.log(`axe summary: ${table.length} audits of ${screens.length} screens (${cfg.forms.join(', ')} × ${schemes.join(', ')}), ${bad.length} with violations`);
  console.log(`screens: ${screens.join('; ')}`);
  for (const r of bad) console.log(`  ${r.form} ${r.scheme} ${r.screen}: ${r.n}`);
});
