// Lighthouse (pinned in web/package.json) on ferry's web UI: the sessions
// list and a session view, as a phone (390×844, mobile form factor) and as
// a desktop (1280×800), in the light and the dark colour scheme, in the
// real Chromium against a real `ferry up`.
// Started by TestLighthouse (web/audit_test.go); cfg.min is the lowest
// score each category may have. The session audited is an echo session
// with a finished turn and a permission waiting for an answer. Chromium
// resolves no host but loopback (--host-resolver-rules), so nothing
// Lighthouse or the page asks for can leave the machine.
// Prints one "lighthouse: <page> <form factor> <scheme> accessibility=N
// best-practices=N" line per run, and fails on a score below cfg.min,
// naming the audits that lost points.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import lighthouse from 'lighthouse';
import { cfg, log, step, until } from './harness.mjs';

const forms = {
  phone: { formFactor: 'mobile', screenEmulation: { mobile: true, width: 390, height: 844, deviceScaleFactor: 2, disabled: false } },
  desktop: { formFactor: 'desktop', screenEmulation: { mobile: false, width: 1280, height: 800, deviceScaleFactor: 1, disabled: false } },
};
const categories = ['accessibility', 'best-practices'];

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ferry-lighthouse-'));
/**
 * open starts Chromium on the profile dir in a colour scheme. A persistent
 * context is Chromium's default one, the one Lighthouse's new tabs open
 * in: the sign-in's cookie and key are there, and stay for the next run on
 * the same profile. colorScheme null leaves the scheme to Chromium (dark
 * by --force-dark-mode), which Lighthouse's tabs follow.
 */
function open(scheme) {
  return chromium.launchPersistentContext(dir, {
    executablePath: cfg.chromium, colorScheme: null,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--remote-debugging-port=0',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1', ...(scheme === 'dark' ? ['--force-dark-mode'] : [])],
  });
}
let failed = false;
let ctx = null;
const lines = [];
try {
  // expect is what each page shows when it is signed in and loaded: a
  // score of the sign-in screen would say nothing of these pages.
  const pages = [{ name: 'sessions', path: '/#/', expect: '.session-link' }];
  ctx = await open('light');
  await step('sign in with a login link, start a session with a pending permission', async () => {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.setDefaultTimeout(15000);
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.getByRole('link', { name: 'New session' }).first().click();
    await page.locator('#ns-agent').selectOption('echo');
    await page.locator('#ns-title').fill('Tidy the README');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    for (const text of ['Summarise the README', 'ask: may I rewrite the README?']) {
      await page.locator('#prompt').click();
      await page.keyboard.type(text);
      await page.keyboard.press('Enter');
      await page.locator(text.startsWith('ask:') ? '.interaction.open' : 'article.msg.agent[data-state="done"]').waitFor();
    }
    pages.push({ name: 'session', path: `/${new URL(page.url()).hash}`, expect: '.interaction.open' });
    await page.goto('about:blank');
  });
  for (const scheme of ['light', 'dark']) {
    if (scheme !== 'light') {
      await ctx.close();
      await fs.rm(path.join(dir, 'DevToolsActivePort'), { force: true });
      ctx = await open(scheme);
    }
    const port = Number((await until('DevToolsActivePort', () => fs.readFile(path.join(dir, 'DevToolsActivePort'), 'utf8').catch(() => ''), 10000)).split('\n')[0]);
    let shown = null;
    // Lighthouse's tab opens in this context: see that it shows the page,
    // signed in, in the scheme meant.
    ctx.on('page', (tab) => {
      const want = shown;
      if (!want) return;
      tab.locator(want.selector).first().waitFor({ timeout: 60000 }).then(async () => {
        want.ok = true;
        want.dark = await tab.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
      }, () => {});
    });
    for (const p of pages) {
      for (const [form, settings] of Object.entries(forms)) {
        const name = `${p.name} ${form} ${scheme}`;
        await step(`lighthouse: ${name}`, async () => {
          shown = { selector: p.expect, ok: false, dark: null };
          const res = await lighthouse(cfg.base + p.path, {
            port, output: 'json', logLevel: 'error', onlyCategories: categories,
            // network-requests lists what the page fetched (checked below).
            onlyAudits: ['network-requests'],
            // Keep the sign-in: the storage reset would clear its cookie and key.
            disableStorageReset: true,
            throttlingMethod: 'provided', maxWaitForLoad: 30000,
            ...settings,
          });
          const lhr = res.lhr;
          if (lhr.runtimeError) throw new Error(`lighthouse: ${lhr.runtimeError.code}: ${lhr.runtimeError.message}`);
          if (!shown.ok) throw new Error(`the page audited never showed ${p.expect}: not signed in, or not loaded`);
          if (shown.dark !== (scheme === 'dark')) throw new Error(`the page audited was not in the ${scheme} scheme`);
          const scores = categories.map((c) => Math.round(lhr.categories[c].score * 100));
          const line = `lighthouse: ${name} ${categories.map((c, i) => `${c}=${scores[i]}`).join(' ')}`;
          lines.push(line);
          log(line);
          for (const [i, c] of categories.entries()) {
            const lost = lhr.categories[c].auditRefs.filter((r) => r.weight > 0 && lhr.audits[r.id].score !== null && lhr.audits[r.id].score < 1)
              .map((r) => `${r.id}: ${lhr.audits[r.id].title}${(lhr.audits[r.id].details?.items || []).slice(0, 3).map((it) => ` [${it.node?.selector || it.description || it.source?.url || ''}]`).join('')}`);
            if (scores[i] < cfg.min) {
              failed = true;
              log(`FAIL  ${name}: ${c} ${scores[i]} < ${cfg.min}: ${lost.join('; ')}`);
            } else if (lost.length) log(`      ${name}: ${c} lost points on ${lost.join('; ')}`);
          }
          // The page made no request beyond loopback.
          const away = (lhr.audits['network-requests']?.details?.items || []).map((r) => r.url).filter((u) => !/^(https?:\/\/127\.0\.0\.1[:/]|data:|blob:|about:)/.test(u));
          if (away.length) {
            failed = true;
            log(`FAIL  ${name}: requests beyond loopback: ${away.join(', ')}`);
          }
        });
      }
    }
  }
} catch (e) {
  failed = true;
  log(`FAIL  ${e?.stack || e}`);
} finally {
  await ctx?.close();
  await fs.rm(dir, { recursive: true, force: true });
}
console.log(`scores:\n${lines.join('\n')}`);
log(failed ? 'the lighthouse audit failed' : 'the lighthouse audit passed');
process.exit(failed ? 1 : 0);
