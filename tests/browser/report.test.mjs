// moeplan report pages in headless Chromium (issue 18 item 2), run by
// tests/browser/run.sh, which writes the pages first. Each page must load with
// no console error and no request but its own file, draw every chart with data
// points, look like something in a screenshot, and zoom its timeline. Values a
// chart shows are checked against the page's data, and the sweep's heat map
// against the CSV itself. Environment: MOEPLAN_REPORT_DIR (the pages and
// table4.csv), MOEPLAN_CHROMIUM (the browser), MOEPLAN_SCREENSHOTS (a folder
// to keep the screenshots in, for docs/img; optional).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { toPalettePng } from './png_palette.mjs';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const dir = process.env.MOEPLAN_REPORT_DIR;
const shots = process.env.MOEPLAN_SCREENSHOTS || '';

const PLAN_PAGES = {
  foldmoe: 'degree-curve',
  fsmoe: 'grad-partition',
  flowmoe: 'sp-curve',
  folding: 'mfu-memory',
};

let browser;
before(async () => {
  assert.ok(dir && fs.existsSync(dir), 'MOEPLAN_REPORT_DIR names the folder of the pages');
  browser = await chromium.launch({ executablePath: process.env.MOEPLAN_CHROMIUM, args: ['--disable-gpu'] });
});
after(async () => {
  if (browser) await browser.close();
});

// Opens a page, recording everything that would mean it is broken or not self-contained.
async function open(name) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const problems = [];
  const requests = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  page.on('request', (r) => requests.push(r.url()));
  const url = pathToFileURL(path.join(dir, name)).href;
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForSelector('main[data-ready="true"]', { timeout: 15000 });
  return { page, problems, requests, url };
}

function pageIsClean({ problems, requests, url }) {
  assert.deepEqual(problems, [], 'no console errors, page errors or failed requests');
  const others = requests.filter((r) => r !== url && !r.startsWith('data:'));
  assert.deepEqual(others, [], 'the page fetches nothing but itself');
}

async function charts(page) {
  return page.$$eval('figure.chart', (figs) =>
    figs.map((f) => ({
      name: f.dataset.chart,
      points: Number(f.dataset.points),
      marks: f.querySelectorAll('svg .mark').length,
      canvas: f.querySelector('canvas') !== null,
    })));
}

// Every chart drew marks; an SVG chart's count is its .mark elements.
function chartsHaveData(list, expected) {
  assert.deepEqual(list.map((c) => c.name).sort(), expected.slice().sort(), 'the charts of this page');
  for (const c of list) {
    assert.ok(c.points > 0, `${c.name} has data points`);
    if (!c.canvas) assert.equal(c.marks, c.points, `${c.name}: its .mark elements are its points`);
  }
}

// A screenshot that is not blank: decoded by the browser, many colours, some ink.
async function screenshotNotBlank(page, name) {
  const png = await page.screenshot({ fullPage: true });
  const seen = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) {
      const v = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
      if (colours.size < 4096) colours.add(v);
      if (v !== 0xffffff) ink++;
    }
    return { colours: colours.size, ink: ink / (d.length / 4) };
  }, png.toString('base64'));
  assert.ok(seen.colours >= 16, `screenshot has ${seen.colours} colours`);
  assert.ok(seen.ink >= 0.03, `screenshot is ${(100 * seen.ink).toFixed(1)}% ink`);
  if (shots) await keepScreenshot(page, name, png);
}

// The docs' copy (docs/img): the page as an indexed PNG (png_palette.mjs),
// under 150 KiB so that the repository stays small, and one the browser reads.
async function keepScreenshot(page, name, png) {
  const small = toPalettePng(png);
  assert.ok(small.length <= 150 * 1024, `docs screenshot of ${name} is ${small.length} bytes, over 150 KiB`);
  const size = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    return [img.width, img.height];
  }, small.toString('base64'));
  assert.deepEqual(size, [png.readUInt32BE(16), png.readUInt32BE(20)], 'the indexed copy has the screenshot\'s size');
  fs.writeFileSync(path.join(shots, `report-${name}.png`), small);
}

async function view(page, chart) {
  return page.$eval(`figure[data-chart="${chart}"]`, (f) => ({
    start: Number(f.dataset.viewStartMs),
    end: Number(f.dataset.viewEndMs),
    ticks: JSON.parse(f.dataset.ticks),
    points: Number(f.dataset.points),
  }));
}

// Tick labels at a step of 1, 2 or 5 times a power of ten, inside the view.
function roundTicks(v) {
  const values = v.ticks.map(Number);
  assert.ok(values.length >= 2, `at least two ticks: ${v.ticks}`);
  const step = values[1] - values[0];
  const power = Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
  const mantissa = Math.round(step / power);
  assert.ok([1, 2, 5].includes(mantissa) && Math.abs(step - mantissa * power) <= 1e-9 * step, `step ${step} is 1, 2 or 5 x 10^k`);
  for (let i = 1; i < values.length; i++)
    assert.ok(Math.abs(values[i] - values[i - 1] - step) <= 1e-6 * step, `even ticks: ${v.ticks}`);
  for (const t of values) assert.ok(t >= v.start - 1e-9 * v.end && t <= v.end + 1e-9 * v.end, `tick ${t} inside the view`);
}

async function zoomChangesTheView(page) {
  const full = await view(page, 'timeline-chosen');
  roundTicks(full);
  const canvas = page.locator('figure[data-chart="timeline-chosen"] canvas');
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
  await page.mouse.wheel(0, -600);
  await page.waitForFunction(
    (end) => Number(document.querySelector('figure[data-chart="timeline-chosen"]').dataset.viewEndMs) !== end, full.end,
    { timeout: 5000 });
  const zoomed = await view(page, 'timeline-chosen');
  assert.ok(zoomed.end - zoomed.start < 0.8 * (full.end - full.start), `wheel zoomed in: ${zoomed.start}..${zoomed.end}`);
  assert.notDeepEqual(zoomed.ticks, full.ticks, 'the axis follows the zoom');
  assert.ok(zoomed.points <= full.points, 'fewer tasks in a narrower view');
  roundTicks(zoomed);
  const baseline = await view(page, 'timeline-baseline');
  assert.deepEqual([baseline.start, baseline.end], [zoomed.start, zoomed.end], 'the baseline shares the view');
  await page.click('button[data-action="zoom in"]');
  const twice = await view(page, 'timeline-chosen');
  assert.ok(Math.abs((twice.end - twice.start) / (zoomed.end - zoomed.start) - 0.5) < 1e-9, 'the + button halves the span');
  await page.click('button[data-action="reset"]');
  const reset = await view(page, 'timeline-chosen');
  assert.deepEqual([reset.start, reset.end, reset.points], [full.start, full.end, full.points], 'reset shows everything again');
}

for (const [family, familyChart] of Object.entries(PLAN_PAGES)) {
  test(`report of a ${family} scenario`, async () => {
    const opened = await open(`${family}.html`);
    const { page } = opened;
    try {
      pageIsClean(opened);
      const data = await page.evaluate(() => JSON.parse(document.getElementById('moeplan-data').textContent));
      assert.equal(data.family, family);
      const list = await charts(page);
      chartsHaveData(list, ['schedule-bars', 'timeline-chosen', 'timeline-baseline', familyChart]);
      // Three segments per bar; at full view every task of a timeline is drawn.
      assert.equal(list.find((c) => c.name === 'schedule-bars').points, 3 * data.bars.length);
      for (const t of data.timelines)
        assert.equal(list.find((c) => c.name === `timeline-${t.label}`).points, t.tasks.length / 6, `${t.label}: every task drawn`);
      // The chosen bar's segments add up to the plan's iteration time.
      const chosen = await page.$$eval('figure[data-chart="schedule-bars"] rect.mark', (rects) =>
        rects.map((r) => Number(r.dataset.value)));
      const row = data.bars.findIndex((b) => b.role === 'chosen');
      const total = chosen.slice(3 * row, 3 * row + 3).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(total - data.plan.iteration_ms) <= 1e-9 * data.plan.iteration_ms, `chosen bar ${total} ms`);
      await screenshotNotBlank(page, family);
      await zoomChangesTheView(page);
      pageIsClean(opened);
    } finally {
      await page.close();
    }
  });
}

// The CSV's geometric-mean speed-up of one schedule on one scenario, computed here from the file.
function geomeanFromCsv(csv, schedule, scenario, column) {
  const lines = fs.readFileSync(csv, 'utf8').trim().split('\n');
  const head = lines[0].split(',');
  const at = (name) => head.indexOf(name);
  let sum = 0;
  let n = 0;
  for (const line of lines.slice(1)) {
    const cells = line.split(',');
    if (cells[at('schedule')] !== schedule || cells[at('scenario')] !== scenario || cells[at(column)] === '') continue;
    sum += Math.log(Number(cells[at(column)]));
    n++;
  }
  return { value: Math.exp(sum / n), count: n };
}

test('report of the FSMoE Table 4 sweep', async () => {
  const opened = await open('table4.html');
  const { page } = opened;
  try {
    pageIsClean(opened);
    chartsHaveData(await charts(page), ['heatmap-summary', 'heatmap-detail', 'speedup-bars']);
    const data = await page.evaluate(() => JSON.parse(document.getElementById('moeplan-data').textContent));
    const s = data.sweep;
    assert.equal(s.points, 2916, 'Table 4: 1,458 configurations on each testbed');
    const cells = await page.$$eval('figure[data-chart="heatmap-summary"] rect.mark', (rects) => rects.length);
    assert.equal(cells, s.schedules.length * s.scenarios.length, 'one cell per schedule and scenario');
    for (const scenario of s.scenarios) {
      const want = geomeanFromCsv(path.join(dir, 'table4.csv'), 'fsmoe', scenario, 'speedup_vs_tutel');
      const cell = await page.$eval(
        `figure[data-chart="heatmap-summary"] rect.mark[data-row="fsmoe"][data-col="${scenario}"]`,
        (r) => ({ value: Number(r.dataset.value), count: Number(r.dataset.count) }));
      assert.equal(cell.count, want.count, `${scenario}: rows in the cell`);
      assert.ok(Math.abs(cell.value - want.value) <= 1e-9 * want.value, `${scenario}: ${cell.value} vs ${want.value}`);
    }
    await screenshotNotBlank(page, 'sweep');
    // Another axis for the rows redraws the detail map with that axis' values.
    await page.selectOption('select[name="rows"]', { label: 'd_model' });
    await page.waitForFunction(
      () => document.querySelector('figure[data-chart="heatmap-detail"] figcaption').textContent.includes('d_model'),
      null, { timeout: 5000 });
    const rows = await page.$$eval('figure[data-chart="heatmap-detail"] rect.mark', (rects) => new Set(rects.map((r) => r.dataset.row)).size);
    assert.equal(rows, 3, 'd_model takes 1024, 2048 and 4096');
    pageIsClean(opened);
  } finally {
    await page.close();
  }
});
