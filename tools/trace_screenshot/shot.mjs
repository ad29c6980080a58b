// Screenshots a Chrome JSON trace in the Performance panel of the DevTools that headless Chromium
// bundles (shared/reference/traces.md 1c item 4); tools/trace_screenshot.sh runs it.
//
//   node shot.mjs TRACE.json OUT.png [CHROMIUM]
//
// Everything is local: Chromium serves its own DevTools front end on the debugging port, and the
// trace is fed through the panel's "Load trace" file chooser (?loadTimelineFromURL= is blocked by
// the front end's CSP). The clicks below (process headers, overview) use the layout of Debian 12's
// Chromium 156; check the picture after a Chromium upgrade.

import fs from 'node:fs';
import {chromium} from 'playwright-core';

const [trace, shot, executablePath = '/usr/bin/chromium'] = process.argv.slice(2);
if (!trace || !shot) {
  console.error('usage: node shot.mjs TRACE.json OUT.png [CHROMIUM]');
  process.exit(2);
}
const processes =
    JSON.parse(fs.readFileSync(trace, 'utf8')).traceEvents.filter((e) => e.name === 'process_name');
const port = 9333 + (process.pid % 500);
const width = 1600, height = 1350;
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         `--remote-debugging-port=${port}`, '--remote-debugging-address=127.0.0.1'],
});
try {
  const page = await browser.newPage({viewport: {width, height}});
  await page.goto(`http://127.0.0.1:${port}/devtools/trace_app.html`);
  await page.waitForTimeout(2000);
  await page.keyboard.press('Escape');
  await page.locator('div[aria-label="Performance"]').first().click({force: true});
  const chooser = page.waitForEvent('filechooser');
  await page.locator('[aria-label^="Load trace"]').first().click();
  await (await chooser).setFiles(trace);
  await page.waitForTimeout(4000);
  // Hide the annotations sidebar (a click event: the shortcuts button overlaps it).
  await page.locator('[jslog*="timeline.sidebar"]').first().evaluate((el) => el.click());
  await page.waitForTimeout(500);

  // Expand every chip's process: its header rows are 21 px apart below the time ruler while all
  // are collapsed; bottom up, so the rows above do not move. The panel lists processes by their
  // busiest track, not by podsim's sort index, so the last one is "system" (one slice).
  const chart = await page.locator('canvas.flame-chart-canvas').first().boundingBox();
  for (let i = processes.length - 2; i >= 0; --i) {
    await page.mouse.click(chart.x + 40, chart.y + 24 + 21 * i);
    await page.waitForTimeout(300);
  }
  // The whole step: drag across the overview (DevTools zooms in on a busy part by default).
  await page.mouse.move(2, 80);
  await page.mouse.down();
  await page.mouse.move(width / 2, 80, {steps: 5});
  await page.mouse.move(width - 2, 80, {steps: 5});
  await page.mouse.up();
  await page.waitForTimeout(800);
  // Select a pipeline send halfway through the step, so the summary shows its arguments.
  await page.keyboard.press('Control+F');
  await page.waitForTimeout(300);
  await page.keyboard.type('pp.send.activations');
  await page.waitForTimeout(800);
  for (let i = 0; i < 9; ++i) {
    await page.keyboard.press('Enter');
    await page.waitForTimeout(200);
  }
  await page.keyboard.press('Escape');
  await page.mouse.move(chart.x + 600, chart.y + 650);
  await page.waitForTimeout(800);
  await page.screenshot({path: shot});
} finally {
  await browser.close();
}
