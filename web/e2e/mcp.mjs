// Browser test of a workspace's MCP servers in ferry's web UI (issue 36),
// on a phone: the approval of the workspace's .mcp.json, then the MCP
// tool call rendered like any tool's. Driven by web/mcp_test.go
// (TestBrowserAgentMCP), which checks what reached the model. Every wait
// is bounded.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 20000;

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'mcp');
  await step('start a session of ferry\'s agent on the phone', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    if (!(await page.locator('#ns-title').isVisible())) {
      await page.getByRole('link', { name: 'New session' }).first().tap();
    }
    await page.locator('#ns-title').fill('MCP');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
  });
  await step('the first prompt asks to approve the workspace\'s .mcp.json, naming each server', async () => {
    await page.locator('#prompt').click();
    await page.keyboard.type('echo through the MCP server', { delay: 5 });
    // On a phone Enter is a new line: Send sends.
    await page.getByRole('button', { name: 'Send' }).tap();
    const card = page.locator('.interaction.open').first();
    await card.waitFor();
    assert.match(await card.locator('.q-title').innerText(), /\.mcp\.json \(broken, tools\)/);
    const msg = await card.locator('.q-message').innerText();
    assert.ok(msg.includes(cfg.command), `the command is not shown: ${msg}`);
    assert.match(msg, /exit 3/);
    const labels = await card.locator('.q-actions button').allInnerTexts();
    assert.deepEqual(labels, ['Approve', 'Not now', 'Never']);
    await card.scrollIntoViewIfNeeded();
    await shot(page, 'agent-mcp-approval');
    await card.locator('button[data-value="allow_always"]').tap();
  });
  await step('the MCP tool asks like any tool; allowed, its call is rendered with its output', async () => {
    const card = page.locator('.interaction.open', { hasText: 'mcp__tools__echo' }).first();
    await card.waitFor();
    await card.locator('button[data-value="allow_once"]').tap();
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    const tool = page.locator('.tool[data-tool="mcp__tools__echo"]');
    await tool.waitFor();
    await tool.locator('summary').tap();
    await tool.locator('.tool-output').waitFor();
    assert.match(await tool.locator('.tool-output').innerText(), /echo: hello from the phone/);
    await page.locator('article.msg.agent', { hasText: 'The MCP server echoed it.' }).first().waitFor();
    // The server that exits at once is reported; the turn went on.
    await page.locator('main').getByText(/MCP server "broken" is not available/).first().waitFor();
    await tool.scrollIntoViewIfNeeded();
    await shot(page, 'agent-mcp-call');
  });
  await ctx.close();
});
