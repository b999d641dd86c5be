// What every browser script in web/e2e shares: the config file the Go
// test wrote (process.argv[2], see runScript in web/e2e_test.go), a log
// with the time since start, named steps, bounded polling, page-error
// watching, axe-core's WCAG 2.1 A/AA audit, screenshots into
// cfg.screenshots, and one way to launch Chromium and end the run.
// Guarantees: a step's failure is logged once with its stack; every
// problem a page showed (problems) fails the run; the process exits 1 on
// any failure and 0 only when every step passed and no page had a problem.

import { chromium } from 'playwright-core';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';

/** cfg is the JSON config the Go test passed as the first argument. */
export const cfg = JSON.parse(await fs.readFile(process.argv[2], 'utf8'));

/** problems are what the pages showed that they should not (errors, accessibility). */
export const problems = [];

const started = Date.now();
const axeSource = await fs.readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
// stepFailures are the errors step already logged, so main does not log them again.
const stepFailures = new WeakSet();

/** log prints s after the seconds since the script started. */
export function log(s) {
  console.log(`${String(((Date.now() - started) / 1000).toFixed(1)).padStart(6)}s  ${s}`);
}

/** step runs fn under a name, logging ok with its duration, or FAIL with the stack and rethrows. */
export async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    log(`ok    ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    log(`FAIL  ${name}: ${e.stack || e}`);
    if (e !== null && typeof e === 'object') stepFailures.add(e);
    throw e;
  }
}

/** until polls fn every 100 ms until it returns a truthy value, for at most wait ms. */
export async function until(what, fn, wait) {
  const end = Date.now() + wait;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** control asks the Go test (cfg.control) to do what only Go can; returns its answer. */
export async function control(what) {
  const r = await fetch(cfg.control + what, { method: 'POST' });
  if (!r.ok) throw new Error(`control ${what}: ${r.status} ${await r.text()}`);
  return r.text();
}

/**
 * watch records page errors and console errors (CSP or Trusted Types
 * violations among them); a refused WebSocket upgrade or a failed fetch
 * (signed out, master down) is expected and passed over.
 */
export function watch(page, name) {
  page.on('pageerror', (e) => problems.push(`${name}: page error: ${e.message} ${e.stack}`));
  page.on('console', (m) => {
    const t = m.text();
    if (m.type() !== 'error') return;
    if (/WebSocket connection to .* failed|Failed to load resource/.test(t)) return;
    problems.push(`${name}: console error: ${t}`);
  });
}

/**
 * audit runs axe-core's WCAG 2.1 A and AA rules (labels, names, roles,
 * contrast, …) on the page as it is and records every violation.
 */
export async function audit(page, name) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'],
  }));
  for (const v of res.violations) {
    problems.push(`${name}: accessibility: ${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  }
}

/** screenshot saves the page as cfg.screenshots/<name>.png, without an audit. */
export async function screenshot(page, name) {
  await fs.mkdir(cfg.screenshots, { recursive: true });
  await page.screenshot({ path: path.join(cfg.screenshots, `${name}.png`) });
}

/** shot audits the page (see audit) and saves it (see screenshot). */
export async function shot(page, name) {
  await audit(page, name);
  await screenshot(page, name);
}

/**
 * launch starts headless Chromium (cfg.chromium) as every script runs it;
 * extra.args are added to its flags, extra.env to its environment. With
 * extra.profile (a directory) it returns a persistent context on that
 * profile instead of a browser: a browser's contexts are incognito, where
 * Chromium installs no app.
 */
export function launch(extra = {}) {
  const opts = {
    executablePath: cfg.chromium,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', ...(extra.args || [])],
    ...(extra.env ? { env: { ...process.env, ...extra.env } } : {}),
  };
  if (extra.profile) return chromium.launchPersistentContext(extra.profile, { ...opts, ...extra.context });
  return chromium.launch(opts);
}

/**
 * main launches Chromium (with launch's extra), runs suite(browser) (a
 * persistent context with extra.profile), closes the browser, lists
 * the problems the pages showed, and exits: 1 when the suite threw or a
 * page had a problem, else 0.
 */
export async function main(suite, extra = {}) {
  const browser = await launch(extra);
  let code = 0;
  try {
    await suite(browser);
  } catch (e) {
    code = 1;
    // A step logged its own failure; anything else would go unexplained.
    if (!stepFailures.has(e)) log(`FAIL  ${e?.stack || e}`);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    console.log(`problems in the pages:\n  ${problems.join('\n  ')}`);
    code = 1;
  }
  log(code ? 'the browser tests failed' : 'the browser tests passed');
  process.exit(code);
}

// The session view's menus (web/static/js/menu.js): the header's session
// menu and the prompt box's + menu.
const MENUS = { session: ['#session-menu-btn', '#session-menu'], plus: ['.plus-btn', '.plus-menu'] };

/** menuItem opens the session's menu or the + menu (which) and returns its item named name. */
export async function menuItem(page, which, name) {
  const [btn, list] = MENUS[which];
  if (!(await page.locator(list).isVisible())) await page.locator(btn).click();
  await page.locator(list).waitFor();
  return page.locator(list).getByRole('menuitem', { name });
}

/** offered says whether the menu (which) offers an item named name, leaving it closed. */
export async function offered(page, which, name) {
  const item = await menuItem(page, which, name);
  const yes = await item.isVisible();
  await page.keyboard.press('Escape');
  await page.locator(MENUS[which][1]).waitFor({ state: 'hidden' });
  return yes;
}

/** openSettings opens the session's settings sheet from its mode chip; returns the sheet. */
export async function openSettings(page) {
  const sheet = page.locator('#settings-dialog');
  if (!(await sheet.isVisible())) await page.locator('.mode-chip').click();
  await sheet.waitFor();
  return sheet;
}

/** closeSettings closes the settings sheet. */
export async function closeSettings(page) {
  const sheet = page.locator('#settings-dialog');
  await sheet.getByRole('button', { name: 'Close' }).click();
  await sheet.waitFor({ state: 'hidden' });
}
