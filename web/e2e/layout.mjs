// Browser test of the session view's layout (issue 32, item 1): ferry's
// agent on the fake Anthropic server asks to Edit a file; with that
// permission pending, the session is opened on a phone (390×844, touch)
// and a desktop (1280×800), dark and light, and measured with
// getBoundingClientRect as the app scrolls the permission into view:
// the permission's title, its first changed diff line, Allow and Deny are
// inside the viewport and the conversation; the conversation is at least
// 60 % of the viewport's height; the prompt box at least 55 % of a
// phone's width; the header is one row (all its children share one line).
// Every measure is logged, then all are asserted. Then the session menu
// (keyboard and touch; Delete says why it is off during a turn), the
// settings sheet (labelled, reached from the mode chip, the menu and the
// composer; the default model listed once) and the prompt box that grows
// with its text up to a cap. Started by web/layout_test.go.

import assert from 'node:assert/strict';
import { cfg, log, main, shot, step, watch } from './harness.mjs';

const WAIT = 20000;

const SIZES = [
  { name: 'phone', viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 },
  { name: 'desktop', viewport: { width: 1280, height: 800 } },
];

/** measure reads the layout of the open permission and the frame around it. */
function measure() {
  const r = (el) => {
    if (!el) return null;
    const b = el.getBoundingClientRect();
    return { top: Math.round(b.top), bottom: Math.round(b.bottom), left: Math.round(b.left), right: Math.round(b.right), height: Math.round(b.height), width: Math.round(b.width) };
  };
  const card = document.querySelector('.interaction.open');
  const head = document.querySelector('.session-head');
  const kids = head ? [...head.children].filter((c) => c.getClientRects().length && getComputedStyle(c).visibility !== 'hidden') : [];
  return {
    vw: innerWidth,
    vh: innerHeight,
    transcript: r(document.querySelector('.transcript')),
    prompt: r(document.querySelector('#prompt')),
    header: r(head),
    headerKids: kids.map((c) => ({ what: c.className || c.tagName, ...r(c) })),
    title: r(card?.querySelector('.q-title')),
    firstChange: r(card?.querySelector('tr.add td.code, tr.del td.code, td.code.add, td.code.del')),
    allow: r(card?.querySelector('button[data-value="allow_once"]')),
    deny: r(card?.querySelector('button[data-value="deny"]')),
  };
}

/** problemsOf lists what m breaks of the layout's promises. */
function problemsOf(m, phone) {
  const out = [];
  const inside = (name) => {
    const b = m[name];
    if (!b) {
      out.push(`${name}: not found`);
      return;
    }
    if (b.top < 0 || b.bottom > m.vh || b.left < 0 || b.right > m.vw) out.push(`${name} ${JSON.stringify(b)} is not inside the ${m.vw}×${m.vh} viewport`);
    const t = m.transcript;
    if (t && (b.top < t.top - 1 || b.bottom > t.bottom + 1)) out.push(`${name} (${b.top}..${b.bottom}) is outside the conversation (${t.top}..${t.bottom})`);
  };
  for (const n of ['title', 'firstChange', 'allow', 'deny']) inside(n);
  if (!m.transcript || m.transcript.height < 0.6 * m.vh) out.push(`the conversation is ${m.transcript?.height} px high, under 60 % of ${m.vh}`);
  if (phone && (!m.prompt || m.prompt.width < 0.55 * m.vw)) out.push(`the prompt box is ${m.prompt?.width} px wide, under 55 % of ${m.vw}`);
  // One row: every child of the header overlaps every other vertically.
  const k = m.headerKids;
  if (!k.length) out.push('no header');
  else {
    const maxTop = Math.max(...k.map((c) => c.top));
    const minBottom = Math.min(...k.map((c) => c.bottom));
    if (maxTop >= minBottom) out.push(`the header is more than one row: children from ${Math.min(...k.map((c) => c.top))} to ${Math.max(...k.map((c) => c.bottom))} (${k.map((c) => `${c.what}@${c.top}`).join(', ')})`);
    if (m.header.height > 72) out.push(`the header is ${m.header.height} px high`);
  }
  return out;
}

await main(async (browser) => {
  const first = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  first.setDefaultTimeout(WAIT);
  const page = await first.newPage();
  watch(page, 'start');
  let url = '';

  await step('sign in, start a session with ferry\'s agent; it asks to Edit', async () => {
    await page.goto(cfg.login);
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    await page.locator('#ns-title').fill('Move the home route under /home');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    await page.locator('#prompt').click();
    await page.keyboard.type('Please move the home route and the two after it under /home.', { delay: 2 });
    await page.keyboard.press('Enter');
    await page.locator('.interaction.open .diff-box').waitFor();
    url = page.url();
  });
  const state = await first.storageState();
  await first.close();

  const failures = [];
  const pages = {};
  for (const size of SIZES) {
    for (const scheme of ['dark', 'light']) {
      const name = `${size.name}-${scheme}`;
      await step(`${name}: measure the pending permission`, async () => {
        const { name: _n, ...opts } = size;
        const ctx = await browser.newContext({ ...opts, colorScheme: scheme, storageState: state });
        ctx.setDefaultTimeout(WAIT);
        const p = await ctx.newPage();
        watch(p, name);
        await p.goto(url);
        await p.locator('.interaction.open .diff-box table.diff').waitFor();
        await p.locator('.status-pill', { hasText: 'Waiting for you' }).waitFor();
        await p.waitForTimeout(400); // the app's scrolling settles
        const m = await p.evaluate(measure);
        log(`${name}: ${JSON.stringify(m)}`);
        const bad = problemsOf(m, size.name === 'phone');
        for (const b of bad) failures.push(`${name}: ${b}`);
        await shot(p, `layout-${name}`);
        pages[name] = p;
      });
    }
  }
  await step('the layout keeps its promises on every size and scheme', async () => {
    assert.deepEqual(failures, []);
  });

  await step('phone: the session menu by touch; Delete says why it is off during a turn', async () => {
    const p = pages['phone-dark'];
    const btn = p.locator('#session-menu-btn');
    assert.equal(await btn.getAttribute('aria-haspopup'), 'menu');
    await btn.tap();
    const menu = p.locator('#session-menu');
    await menu.waitFor();
    assert.equal(await btn.getAttribute('aria-expanded'), 'true');
    for (const it of await menu.locator('[role="menuitem"]:visible').all()) {
      const b = await it.boundingBox();
      assert.ok(b.height >= 44 && b.width >= 44, `${await it.innerText()}: a ${b.width}×${b.height} touch target`);
      assert.ok(b.y >= 0 && b.y + b.height <= 844, `${await it.innerText()} off screen`);
    }
    const del = p.locator('#session-delete');
    assert.equal(await del.getAttribute('aria-disabled'), 'true', 'Delete during a turn');
    assert.match(await del.innerText(), /Stop the turn to delete/);
    for (const n of ['Settings…', 'Rename', 'Archive', 'Files', 'Changes']) {
      assert.ok(await menu.getByRole('menuitem', { name: new RegExp(`^${n.replace('…', '')}`) }).count() >= (n === 'Changes' ? 0 : 1), `no ${n} in the menu`);
    }
    await shot(p, 'phone-session-menu');
    await p.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden' });
  });

  await step('desktop: the menu by keyboard; arrows move, Esc closes and gives the focus back', async () => {
    const p = pages['desktop-light'];
    await p.locator('#session-menu-btn').focus();
    await p.keyboard.press('Enter');
    const menu = p.locator('#session-menu');
    await menu.waitFor();
    const focused = () => p.evaluate(() => document.activeElement?.textContent);
    const a = await focused();
    await p.keyboard.press('ArrowDown');
    const b = await focused();
    assert.notEqual(a, b, 'ArrowDown did not move');
    await p.keyboard.press('Escape');
    await menu.waitFor({ state: 'hidden' });
    assert.equal(await p.evaluate(() => document.activeElement?.id), 'session-menu-btn');
  });

  await step('the settings sheet: from the mode chip, labelled, the default model once', async () => {
    const p = pages['phone-light'];
    // The chip is small, but its hit area is 44 px tall on a touch screen:
    // a tap 8 px above its border still opens the sheet.
    const chip = await p.locator('.mode-chip').boundingBox();
    const at = { x: chip.x + chip.width / 2, y: chip.y - 8 };
    assert.ok(await p.evaluate(({ x, y }) => !!document.elementFromPoint(x, y)?.closest('.mode-chip'), at),
      `a tap 8 px above the ${chip.height} px mode chip misses it`);
    await p.touchscreen.tap(at.x, at.y);
    const sheet = p.locator('#settings-dialog');
    await sheet.waitFor();
    for (const label of ['Mode', 'Model', 'Ask timeout']) await sheet.getByLabel(label, { exact: true }).waitFor();
    await p.locator(`#model-select option[value="${cfg.other_model}"]`).waitFor({ state: 'attached' });
    const texts = await p.locator('#model-select option').allInnerTexts();
    assert.equal(texts.filter((t) => t.includes(cfg.default_model)).length, 1, `the default model listed more than once: ${JSON.stringify(texts)}`);
    await shot(p, 'phone-settings');
    await sheet.getByRole('button', { name: 'Close' }).tap();
    await sheet.waitFor({ state: 'hidden' });
  });

  await step('the settings sheet from the menu and from the composer\'s + button', async () => {
    const p = pages['desktop-dark'];
    await p.locator('#session-menu-btn').click();
    await p.locator('#session-menu').getByRole('menuitem', { name: 'Settings…' }).click();
    await p.locator('#settings-dialog').waitFor();
    await p.keyboard.press('Escape');
    await p.locator('#settings-dialog').waitFor({ state: 'hidden' });
    await p.locator('.plus-btn').click();
    await p.locator('.plus-menu').getByRole('menuitem', { name: 'Settings…' }).click();
    await p.locator('#settings-dialog').waitFor();
    await p.keyboard.press('Escape');
  });

  await step('phone: the prompt box grows with its text, up to a cap, then scrolls', async () => {
    const p = pages['phone-dark'];
    const box = p.locator('#prompt');
    const h0 = (await box.boundingBox()).height;
    await box.tap();
    for (let i = 0; i < 3; i++) await p.keyboard.press('Enter');
    await p.keyboard.type('four lines');
    const h1 = (await box.boundingBox()).height;
    assert.ok(h1 > h0 + 30, `the box did not grow: ${h0} → ${h1}`);
    for (let i = 0; i < 30; i++) await p.keyboard.press('Enter');
    const b = await box.boundingBox();
    const scrolls = await box.evaluate((e) => e.scrollHeight > e.clientHeight);
    log(`prompt box: ${h0} → ${h1} → ${b.height} px (scrolls: ${scrolls})`);
    assert.ok(b.height <= 0.45 * 844, `the box grew to ${b.height} px`);
    assert.ok(scrolls, 'a capped box that does not scroll');
    const t = await p.locator('.transcript').boundingBox();
    assert.ok(t.height > 200, `the conversation shrank to ${t.height} px`);
    await p.keyboard.press('Control+A');
    await p.keyboard.press('Backspace');
  });
});
